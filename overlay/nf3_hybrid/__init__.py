"""nf3-hybrid: serve per-expert NVFP4/MXFP4 + NF3 MoE checkpoints on a stock vLLM."""
__version__ = "0.1.0"
