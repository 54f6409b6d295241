"""Triton kernels of the hybrid tiers (no vLLM import). ``interpret()`` tells whether
they run under TRITON_INTERPRET=1 (CPU), where bf16 ``tl.dot`` is wrong and the kernels
dot in float32 instead."""
import os


def interpret() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
