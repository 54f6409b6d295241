"""SM90 code compiled on the CPU by bench/compile_probe.py, in a child process without
the Triton interpreter. Not in this process: the interpreter the kernel tests run leaves
parts of ``triton.language`` patched for the rest of the process (Triton 3.8: a jit
helper called from an interpreted kernel — ``tl.sum`` among them — re-patches
``triton.language.core`` in a scope nothing restores), and a Gluon kernel compiled here
after the kernel tests failed on them ("'block_argument' object has no attribute
'get_element_ty'", full suite only)."""
import os
import subprocess
import sys
from pathlib import Path

PROBE = Path(__file__).parents[2] / "bench" / "compile_probe.py"


def compile_probe(out_dir: Path, *args: str) -> Path:
    """Runs compile_probe with ``args`` and ``--dump out_dir``; the kernels' .ttgir, .ptx
    and .sass files are then in ``out_dir``, its report (a line per kernel) in
    ``out_dir / "report.txt"``."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, str(PROBE), *args, "--dump", str(out_dir)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"compile_probe {' '.join(args)} failed:\n{res.stderr[-4000:]}"
    (out_dir / "report.txt").write_text(res.stdout)
    return out_dir
