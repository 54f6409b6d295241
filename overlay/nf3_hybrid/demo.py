"""``make demo``: the whole data path on the embedded tiny model, in a few minutes on a CPU."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

logger = logging.getLogger(__name__)


def _gpu_serving_available() -> str:
    """Empty when vLLM can serve here, else the reason it cannot."""
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed"
    return ""


def run_demo(build: Path, force: bool = False) -> int:
    from .checkpoint.maker import MakerOptions, make_hybrid_checkpoint, summarize
    from .checkpoint.reference import format_report, plot_weight_errors, quality_report
    from .checkpoint.tiny import make_tiny_model, sample_token_ids

    t0 = time.time()
    build.mkdir(parents=True, exist_ok=True)
    src, hyb = build / "tiny-bf16", build / "tiny-hybrid"
    if force or not (src / "config.json").is_file():
        make_tiny_model(src, force=True)
        print(f"[demo] tiny bf16 model: {src}")
    else:
        print(f"[demo] reusing {src} (--force rebuilds)")
    if force or not (hyb / "config.json").is_file():
        res = make_hybrid_checkpoint(src, hyb, MakerOptions(force=True))
        print("[demo] " + summarize(res))
    else:
        print(f"[demo] reusing {hyb} (--force rebuilds)")
    tokens = sample_token_ids(src)
    rep = quality_report(src, hyb, tokens, work_dir=build)
    print(format_report(rep))
    (build / "quality_report.json").write_text(json.dumps(rep.as_dict(), indent=2) + "\n")
    png = plot_weight_errors(rep.weight_rows, build / "weight_error.png")
    print(f"[demo] wrote {build / 'quality_report.json'} and {png}")
    why_not = _gpu_serving_available()
    if why_not:
        print(f"[demo] serving through vLLM skipped: {why_not}")
    else:
        from .serve_demo import serve_and_compare

        serve_and_compare(src, hyb, tokens, build)
    print(f"[demo] done in {time.time() - t0:.0f} s")
    return 0
