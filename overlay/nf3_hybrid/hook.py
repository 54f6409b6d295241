"""Start-up hook: patch vLLM's ModelOpt module the moment it is imported.

The ``.pth`` file runs ``arm()`` in every interpreter, so vLLM's TP worker processes
(spawned, not forked) are patched without any flag. Arming costs one string compare
per import and never imports vLLM, torch or anything heavy; applying the patch happens
only when vLLM itself imports ``TARGET``. Nothing here may raise into interpreter
start-up: a failure is reported in one line and vLLM stays stock.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys

TARGET = "vllm.model_executor.layers.quantization.modelopt"
_state = {"armed": False, "patched": False, "error": None, "skipped": None}


def _log():
    # under "vllm." so the message goes through vLLM's own log handler and format
    return logging.getLogger("vllm.nf3_hybrid.hook")


def _one_line(msg: str):
    """One warning line: through vLLM's logger when it is set up, else on stderr."""
    log = _log()
    if log.hasHandlers():
        log.warning("nf3-hybrid: %s", msg)
    else:
        sys.stderr.write(f"[nf3-hybrid] {msg}\n")


def _apply(module) -> None:
    if _state["patched"]:
        return
    try:
        from .vllm_patch import install

        reason = install(module)
    except Exception as exc:  # the overlay is broken: leave vLLM exactly as it is
        _state["error"] = f"{type(exc).__name__}: {exc}"
        _one_line(f"patch not applied, vLLM stays stock: {_state['error']}")
        return
    if reason:
        _state["skipped"] = reason
        _one_line(reason)
        return
    _state["patched"] = True


class _ModeloptFinder(importlib.abc.MetaPathFinder):
    """Finds the real spec through the other finders and wraps its ``exec_module``."""

    _busy = False

    def find_spec(self, name, path, target=None):
        if name != TARGET or self._busy or _state["patched"]:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _apply(module)

        spec.loader.exec_module = exec_module
        return spec


def arm() -> bool:
    """Installs the finder once; patches at once if vLLM's module is already imported."""
    import os

    from . import flags

    try:
        if flags.disabled(os.environ):
            return False
    except flags.FlagError as exc:
        _one_line(f"hook not armed: {exc}")
        return False
    if not any(isinstance(f, _ModeloptFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _ModeloptFinder())
    _state["armed"] = True
    mod = sys.modules.get(TARGET)
    if mod is not None:
        _apply(mod)
    return True


def status() -> dict:
    """armed / patched / error / skipped, for ``doctor`` and the tests."""
    return dict(_state, finder=any(isinstance(f, _ModeloptFinder) for f in sys.meta_path))
