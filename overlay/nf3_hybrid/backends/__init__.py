"""Tier backends: one interface (prepare once, run per step), one module per backend.

No vLLM import here: backends see plain tensors (``TierWeights``), so they can be
tested and benchmarked without building a model.
"""
