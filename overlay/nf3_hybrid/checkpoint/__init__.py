"""Making, reading and checking hybrid checkpoints (no vLLM import)."""
