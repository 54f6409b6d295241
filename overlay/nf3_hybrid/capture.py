"""MoE-layer activation capture: what GPTQ needs to quantize each expert well.

A capture directory holds, per MoE decoder layer, chunks of the layer's input hidden
states (fp16) and routing (int32 top-k expert ids)::

    DIR/layer-00003/chunk-00000.pt   {"x": [n, H] fp16, "topk_ids": [n, k] int32,
                                      "layer": 3, "layer_name": "model.layers.3.mlp.experts"}

Written by vLLM serving with ``HYBRID_ACT_CAPTURE=DIR`` (rank 0, prefill-sized calls)
or offline by ``nf3-hybrid capture`` (HF transformers forward over token ids). Memory
and disk are bounded: at most ``chunk_tokens`` per layer are held before a flush, at most
``max_tokens`` per layer are kept, and a write that fails (full disk) stops the capture
with one message instead of stopping the caller.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch

DEFAULT_MAX_TOKENS = 32768
DEFAULT_CHUNK_TOKENS = 8192
_LAYER_DIR = "layer-{:05d}"
_LAYER_RE = re.compile(r"^layer-(\d+)$")

logger = logging.getLogger(__name__)


class ActivationCapture:
    def __init__(self, directory, max_tokens: int = DEFAULT_MAX_TOKENS, chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
                 warn: Optional[Callable[[str], None]] = None):
        self.dir = Path(directory)
        self.max_tokens = max_tokens
        self.chunk_tokens = chunk_tokens
        self.warn = warn or logger.warning
        self.stopped: Optional[str] = None
        self._buf: Dict[int, List[Tuple[torch.Tensor, torch.Tensor]]] = {}
        self._held: Dict[int, int] = {}
        self._kept: Dict[int, int] = {}
        self._chunks: Dict[int, int] = {}
        self._names: Dict[int, str] = {}

    def kept(self, layer: int) -> int:
        """Tokens of ``layer`` taken so far (flushed or held)."""
        return self._kept.get(layer, 0)

    def add(self, layer: int, layer_name: str, x: torch.Tensor, topk_ids: torch.Tensor) -> None:
        if self.stopped is not None:
            return
        room = self.max_tokens - self._kept.get(layer, 0)
        if room <= 0:
            return
        n = min(room, x.shape[0])
        self._names[layer] = layer_name
        self._buf.setdefault(layer, []).append(
            (x[:n].detach().to(torch.float16).cpu(), topk_ids[:n].detach().to(torch.int32).cpu()))
        self._held[layer] = self._held.get(layer, 0) + n
        self._kept[layer] = self._kept.get(layer, 0) + n
        if self._held[layer] >= self.chunk_tokens or self._kept[layer] >= self.max_tokens:
            self._flush(layer)

    def _flush(self, layer: int) -> None:
        parts = self._buf.pop(layer, [])
        self._held[layer] = 0
        if not parts or self.stopped is not None:
            return
        k = self._chunks.get(layer, 0)
        path = self.dir / _LAYER_DIR.format(layer) / f"chunk-{k:05d}.pt"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"x": torch.cat([p[0] for p in parts]), "topk_ids": torch.cat([p[1] for p in parts]),
                        "layer": layer, "layer_name": self._names.get(layer, "")}, path)
        except OSError as exc:
            self.stopped = f"{type(exc).__name__}: {exc}"
            self.warn(f"nf3-hybrid: activation capture stopped, writing {path} failed ({self.stopped}); "
                      "serving continues without capture")
            self._buf.clear()
            try:  # a partial file left by the failed write would be read as a chunk
                if path.is_file():
                    path.unlink()
            except OSError:
                self.warn(f"nf3-hybrid: could not remove the partial capture file {path}")
            return
        self._chunks[layer] = k + 1

    def flush(self) -> None:
        for layer in list(self._buf):
            self._flush(layer)


def captured_layers(directory) -> List[int]:
    d = Path(directory)
    return sorted(int(m.group(1)) for p in d.iterdir() if (m := _LAYER_RE.match(p.name))) if d.is_dir() else []


def load_layer(directory, layer: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """All captured (x fp16 [n, H], topk_ids int32 [n, k]) of one layer, in capture order."""
    files = sorted((Path(directory) / _LAYER_DIR.format(layer)).glob("chunk-*.pt"))
    if not files:
        raise FileNotFoundError(f"{directory}: no captured activations for layer {layer}")
    parts = [torch.load(f, map_location="cpu", weights_only=True) for f in files]
    return torch.cat([p["x"] for p in parts]), torch.cat([p["topk_ids"] for p in parts])


@torch.no_grad()
def capture_hf(src_dir, token_seqs, directory, max_tokens: int = DEFAULT_MAX_TOKENS,
               chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> Dict[int, int]:
    """Offline capture: a float32 HF forward of the bf16 model over ``token_seqs``, hooks
    on every MoE experts module. Returns tokens captured per layer."""
    from .checkpoint.reference import load_hf

    model = load_hf(src_dir)
    cap = ActivationCapture(directory, max_tokens, chunk_tokens)
    pat = re.compile(r"(?:^|\.)layers\.(\d+)\.mlp\.experts$")
    hooks = []
    for name, mod in model.named_modules():
        m = pat.search(name)
        if not m:
            continue
        layer = int(m.group(1))

        def hook(module, args, kwargs, layer=layer, name=name):
            x = args[0] if args else kwargs["hidden_states"]
            ids = args[1] if len(args) > 1 else kwargs["top_k_index"]
            cap.add(layer, name, x.reshape(-1, x.shape[-1]), ids.reshape(x.reshape(-1, x.shape[-1]).shape[0], -1))

        hooks.append(mod.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        for seq in token_seqs:
            model(torch.tensor([list(seq)]))
    finally:
        for h in hooks:
            h.remove()
    cap.flush()
    return {layer: cap.kept(layer) for layer in captured_layers(directory)}
