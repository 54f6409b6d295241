"""Reading and writing sharded safetensors checkpoints without holding them in memory."""
from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Dict, Iterable, Optional

import torch
from safetensors import safe_open
from safetensors.torch import save_file

INDEX_NAME = "model.safetensors.index.json"
HF_QUANT_CONFIG = "hf_quant_config.json"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "generation_config.json",
)


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be read as asked."""


class CheckpointReader:
    """Lazy access to the tensors of a Hugging Face safetensors checkpoint directory."""

    def __init__(self, path):
        self.path = Path(path)
        cfg = self.path / "config.json"
        if not cfg.is_file():
            raise CheckpointError(f"{self.path}: no config.json (is this a Hugging Face checkpoint?)")
        self.config: dict = json.loads(cfg.read_text())
        self._file_of: Dict[str, str] = {}
        index = self.path / INDEX_NAME
        if index.is_file():
            weight_map = json.loads(index.read_text()).get("weight_map", {})
            for name, fname in weight_map.items():
                self._file_of[name] = fname
        else:
            files = sorted(p.name for p in self.path.glob("*.safetensors"))
            if not files:
                raise CheckpointError(f"{self.path}: no *.safetensors files and no {INDEX_NAME}")
            for fname in files:
                with safe_open(str(self.path / fname), "pt") as f:
                    for name in f.keys():
                        if name in self._file_of:
                            raise CheckpointError(f"{self.path}: tensor {name} appears in two shards")
                        self._file_of[name] = fname
        for fname in set(self._file_of.values()):
            if not (self.path / fname).is_file():
                raise CheckpointError(f"{self.path}: the index names a missing shard {fname}")
        self._stack = ExitStack()
        self._handles: Dict[str, object] = {}

    @property
    def quant_config(self) -> Optional[dict]:
        """``quantization_config`` of config.json, else hf_quant_config.json, else None."""
        qc = self.config.get("quantization_config")
        if qc is not None:
            return qc
        hq = self.path / HF_QUANT_CONFIG
        return json.loads(hq.read_text()) if hq.is_file() else None

    def names(self) -> Iterable[str]:
        return self._file_of.keys()

    def __contains__(self, name: str) -> bool:
        return name in self._file_of

    def _handle(self, fname: str):
        h = self._handles.get(fname)
        if h is None:
            h = self._stack.enter_context(safe_open(str(self.path / fname), "pt"))
            self._handles[fname] = h
        return h

    def get(self, name: str) -> torch.Tensor:
        fname = self._file_of.get(name)
        if fname is None:
            raise CheckpointError(f"{self.path}: tensor {name} not found")
        return self._handle(fname).get_tensor(name)

    def shape_dtype(self, name: str):
        sl = self._handle(self._file_of[name]).get_slice(name)
        return tuple(sl.get_shape()), sl.get_dtype()

    def close(self):
        self._stack.close()
        self._handles.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ShardWriter:
    """Accumulates tensors and writes ``model-XXXXX-of-YYYYY.safetensors`` shards + index."""

    def __init__(self, out_dir, max_shard_bytes: int = 4 << 30):
        self.out_dir = Path(out_dir)
        self.max_shard_bytes = max_shard_bytes
        self._pending: Dict[str, torch.Tensor] = {}
        self._pending_bytes = 0
        self._shards: list = []  # temp file names in order
        self._where: Dict[str, int] = {}
        self.total_bytes = 0

    def add(self, name: str, tensor: torch.Tensor):
        if name in self._where or name in self._pending:
            raise CheckpointError(f"tensor {name} written twice")
        t = tensor.detach().contiguous().cpu()
        self._pending[name] = t
        n = t.numel() * t.element_size()
        self._pending_bytes += n
        self.total_bytes += n
        if self._pending_bytes >= self.max_shard_bytes:
            self.flush()

    def flush(self):
        if not self._pending:
            return
        idx = len(self._shards)
        tmp = f".shard-{idx:05d}.safetensors.tmp"
        save_file(self._pending, str(self.out_dir / tmp), metadata={"format": "pt"})
        for name in self._pending:
            self._where[name] = idx
        self._shards.append(tmp)
        self._pending = {}
        self._pending_bytes = 0

    def finish(self) -> dict:
        self.flush()
        n = len(self._shards)
        final = [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]
        for tmp, dst in zip(self._shards, final):
            os.replace(self.out_dir / tmp, self.out_dir / dst)
        index = {
            "metadata": {"total_size": self.total_bytes},
            "weight_map": {name: final[i] for name, i in sorted(self._where.items())},
        }
        (self.out_dir / INDEX_NAME).write_text(json.dumps(index, indent=2) + "\n")
        return index
