"""Bit formats of hybrid checkpoints: pure torch, never imports vLLM.

Each module packs, unpacks, quantizes and dequantizes one format:
``nf3`` (3-bit codebook, e4m3/32), ``nvfp4`` (ModelOpt NVFP4, e4m3/16 + fp32 global),
``mxfp4`` (e2m1 + e8m0/32), ``fp8`` (non-expert rev-2 per-channel and rev-3 MXFP8).
"""
from . import e2m1, fp8, mxfp4, nf3, nvfp4  # noqa: F401
