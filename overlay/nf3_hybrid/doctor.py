"""``nf3-hybrid doctor``: can this environment serve a hybrid checkpoint, and how?

Prints a few lines — vLLM version, GPU, backends, hook, b12x, fastsafetensors — and
exits non-zero when a hybrid checkpoint cannot be served as configured.
"""
from __future__ import annotations

import importlib.metadata as md
import multiprocessing as mp
from dataclasses import dataclass, field
from typing import List, Optional


def _hook_state(q):
    import nf3_hybrid.hook as h

    q.put(h.status())


def hook_in_spawned_child(timeout: float = 120.0) -> dict:
    """The hook's status in a freshly spawned interpreter (how vLLM starts TP workers)."""
    import queue
    import time

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_hook_state, args=(q,))
    p.start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                return q.get(timeout=1.0)
            except queue.Empty:
                if not p.is_alive() or time.monotonic() > deadline:
                    return {"armed": False, "error": f"the spawned child exited with code {p.exitcode}"}
    finally:
        p.join(5)


def _version(dist: str) -> Optional[str]:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


@dataclass
class Report:
    lines: List[str] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)

    def ok(self, msg):
        self.lines.append(f"  ok    {msg}")

    def info(self, msg):
        self.lines.append(f"  info  {msg}")

    def bad(self, msg):
        self.lines.append(f"  FAIL  {msg}")
        self.problems.append(msg)


def run(spawn_check: bool = True) -> Report:
    from . import __version__, flags, hook
    from .backends.select import BackendError, DeviceInfo, choose
    from .versions import SUPPORTED_VLLM

    r = Report()
    r.info(f"nf3-hybrid {__version__}")
    vllm = _version("vllm")
    if vllm is None:
        r.bad("vLLM is not installed in this environment")
    elif vllm in SUPPORTED_VLLM:
        r.ok(f"vLLM {vllm} (supported)")
    else:
        r.bad(f"vLLM {vllm} is not supported (supported: {', '.join(SUPPORTED_VLLM)}); "
              "HYBRID_ALLOW_UNTESTED_VLLM=1 lets the hook try")
    try:
        f = flags.parse(__import__("os").environ)
        r.ok(f"flags: HYBRID_KEPT={f.kept} HYBRID_NF3={f.nf3}")
    except flags.FlagError as exc:
        r.bad(str(exc))
        f = None
    dev = DeviceInfo("cpu")
    try:
        import torch

        if torch.cuda.is_available():
            cap = torch.cuda.get_device_capability(0)
            dev = DeviceInfo("cuda", cap, torch.cuda.get_device_name(0))
            r.ok(f"GPU: {dev.name}, SM{cap[0]}{cap[1]} ({torch.cuda.device_count()} visible)")
        else:
            r.bad("no CUDA GPU visible: vLLM cannot serve a hybrid checkpoint here")
    except ImportError:
        r.bad("torch is not installed")
    if f is not None:
        try:
            c = choose(f.kept, f.nf3, dev)
            r.ok(f"backends: kept tier {c.kept}, NF3 tier {c.nf3} ({c.reason})")
        except BackendError as exc:
            r.bad(str(exc))
    st = hook.status()
    if st["armed"] and st["finder"]:
        r.ok("import hook armed in this interpreter")
    elif flags.disabled(__import__("os").environ):
        r.bad("import hook disabled by HYBRID_DISABLE=1")
    else:
        r.bad("import hook NOT armed in this interpreter (is nf3_hybrid.pth in site-packages?)")
    if spawn_check:
        child = hook_in_spawned_child()
        (r.ok if child["armed"] else r.bad)(f"import hook armed in a spawned child: {child['armed']}")
    from .backends.b12x_support import capabilities

    caps = capabilities()
    if caps["version"] is None:
        r.info("b12x: not installed (only needed on SM120/121)")
    else:
        r.info(f"b12x {caps['version']}: NVFP4 W4A16 fused MoE {'yes' if caps['w4a16'] else 'no'}, "
               f"NF3 layout (nf3_2p1) {'yes' if caps['nf3'] else 'no'}")
    fst = _version("fastsafetensors")
    r.info(f"fastsafetensors: {fst or 'not installed'} (for --load-format fastsafetensors)")
    return r


def main(spawn_check: bool = True) -> int:
    rep = run(spawn_check)
    print("nf3-hybrid doctor")
    print("\n".join(rep.lines))
    if rep.problems:
        print(f"cannot serve a hybrid checkpoint here: {len(rep.problems)} problem(s) above")
        return 1
    print("ready to serve hybrid checkpoints")
    return 0

