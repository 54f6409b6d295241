"""Triton's CPU interpreter with jit-helper calls that patch once per launch (tests only).

Triton 3.8's interpreter re-patches ``triton.language`` (every builtin of ``tl``,
``tl.tensor``, ``tl.math`` and, for helpers whose module holds it, ``tl.core``) on each
call of a ``@triton.jit`` helper from an interpreted kernel. That cost 25 % of a GEMV
kernel test (17.5 of 70 s in 47 143 calls), and the helper's patch scope is dropped, not
restored: after a kernel that calls ``tl.sum`` (whose module imports ``core``),
``triton.language.core`` stays patched for the rest of the process. Here a helper call
patches only the modules its kernel's launch has not patched yet, and the launch restores
those patches, innermost first, before its own. Kernels compute exactly what they did:
re-patching an already patched module changes nothing (its builtins are wrapped already).
"""
from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class _Launch:
    """Patches made during one kernel launch: the kernel's own scope and those its helper
    calls added. ``restore`` is what the launch calls when it ends."""

    def __init__(self):
        self.kernel = None
        self.langs = frozenset()
        self.helpers = []

    def restore(self):
        while self.helpers:
            self.helpers.pop().restore()
        if self.kernel is not None:
            self.kernel.restore()


class _Nothing:
    def restore(self):
        pass


def install() -> bool:
    """Wraps the interpreter's patching; False (and one warning) where this Triton's
    interpreter is not built as expected, which leaves it unchanged."""
    import triton.language as tl
    from triton.runtime import interpreter

    if getattr(interpreter, "_nf3_patch_once", False):
        return True
    missing = [n for n in ("_patch_lang", "GridExecutor", "InterpretedFunction") if not hasattr(interpreter, n)]
    if missing:
        logger.warning("Triton interpreter without %s: jit helpers keep re-patching on every call", missing)
        return False
    patch_lang = interpreter._patch_lang
    run_grid = interpreter.GridExecutor.__call__
    launches = []

    def langs_of(fn):
        return frozenset(id(v) for v in fn.__globals__.values() if v is tl or v is tl.core)

    def patch_once(fn):
        if not launches:  # a helper called outside any launch: Triton's own behaviour
            return patch_lang(fn)
        launch, langs = launches[-1], langs_of(fn)
        if launch.kernel is None:  # the launch's own call
            launch.kernel, launch.langs = patch_lang(fn), langs
            return launch
        if langs <= launch.langs:
            return _Nothing()
        scope = patch_lang(fn)
        launch.helpers.append(scope)
        launch.langs |= langs
        return scope

    def grid_call(self, *args, **kwargs):
        launches.append(_Launch())
        try:
            return run_grid(self, *args, **kwargs)
        finally:
            launches.pop().restore()  # a no-op when the launch restored itself already

    interpreter._patch_lang = patch_once
    interpreter.GridExecutor.__call__ = grid_call
    _memoize_np_dtype(interpreter, tl)
    interpreter._nf3_patch_once = True
    return True


def _memoize_np_dtype(interpreter, tl):
    """The interpreter's ``_get_np_dtype`` (a Triton dtype's numpy dtype), remembered per
    scalar dtype: Triton's builds its 19-entry table on every call, ~10 % of a GEMV kernel
    test's time (4.7 of 50 s in 118 302 calls). Block types map as their element type;
    pointers (unhashable) go to Triton's, which answers them first."""
    get = getattr(interpreter, "_get_np_dtype", None)
    if get is None:
        logger.warning("Triton interpreter without _get_np_dtype: not remembered")
        return
    known = {}

    def np_dtype(tt_dtype):
        if isinstance(tt_dtype, tl.block_type):
            tt_dtype = tt_dtype.element_ty
        if isinstance(tt_dtype, tl.pointer_type):  # unhashable; Triton's answers before its table
            return get(tt_dtype)
        try:
            return known[tt_dtype]
        except KeyError:
            known[tt_dtype] = got = get(tt_dtype)
            return got

    np_dtype.triton_own = get
    interpreter._get_np_dtype = np_dtype
