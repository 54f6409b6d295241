"""SM90 code compiled on the CPU by bench/compile_probe.py, in a child process without
the Triton interpreter. Not in this process: the interpreter the kernel tests run leaves
parts of ``triton.language`` patched for the rest of the process (Triton 3.8: a jit
helper called from an interpreted kernel — ``tl.sum`` among them — re-patches
``triton.language.core`` in a scope nothing restores), and a Gluon kernel compiled here
after the kernel tests failed on them ("'block_argument' object has no attribute
'get_element_ty'", full suite only).

One child serves every probe of a test process (``compile_probe.py --serve``): a fresh
child a probe spent ~5 of its ~7 s starting Python and importing torch and Triton on the
CI machine, dozens of times a run."""
import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PROBE = Path(__file__).parents[2] / "bench" / "compile_probe.py"
ANSWER = "@@compile_probe@@ "  # compile_probe.ANSWER (that file is a script, not imported here)
TIMEOUT_S = 600

_server = None


class _Server:
    """The child and where its stderr goes (a file: a pipe nobody reads could fill)."""

    def __init__(self):
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, str(PROBE), "--serve"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, bufsize=1)

    def stderr_tail(self) -> str:
        self.err.seek(0)
        return self.err.read()[-4000:]

    def ask(self, args) -> dict:
        """The answer to one probe, or an AssertionError saying why none came."""
        self.proc.stdin.write(json.dumps(list(args)) + "\n")
        self.proc.stdin.flush()
        got = {}

        def read():
            for line in self.proc.stdout:
                if line.startswith(ANSWER):
                    got["answer"] = json.loads(line[len(ANSWER):])
                    return

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(TIMEOUT_S)
        if "answer" not in got:
            why = f"no answer in {TIMEOUT_S} s" if t.is_alive() else f"it exited ({self._exit_code()})"
            tail = self.stderr_tail()
            self.close()
            raise AssertionError(f"compile_probe {' '.join(args)}: {why}:\n{tail}")
        return got["answer"]

    def _exit_code(self):
        """The code of a child whose stdout ended (it may not be reaped yet)."""
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            return "still running, stdout closed"

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()  # the server ends at the end of its input
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


def _close_server():
    global _server
    if _server is not None:
        _server.close()
        _server = None


atexit.register(_close_server)


def compile_probe(out_dir: Path, *args: str) -> Path:
    """Runs compile_probe with ``args`` and ``--dump out_dir``; the kernels' .ttgir, .ptx
    and .sass files are then in ``out_dir``, its report (a line per kernel) in
    ``out_dir / "report.txt"``."""
    global _server
    if _server is None or _server.proc.poll() is not None:
        _close_server()
        _server = _Server()
    args = (*args, "--dump", str(out_dir))
    try:
        res = _server.ask(args)
    except AssertionError:
        _server = None  # closed by ask(); the next probe starts a new child
        raise
    assert res["rc"] == 0, f"compile_probe {' '.join(args)} failed:\n{res['error'][-4000:]}"
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "report.txt").write_text(res["stdout"])
    return Path(out_dir)
