"""Offline ONNX export of the sentence-transformers model, with int8 quantisation.

`ensure_onnx_model(cache_dir)` exports the packaged all-MiniLM-L6-v2 weights once
(about 2 s) and caches the result under `cache_dir`; later calls, from any process,
reuse it. Only this export step needs torch (and transformers); inference needs
onnxruntime and tokenizers alone.

The cached directory holds:

- `model-fp32.onnx`: the transformer, inputs `input_ids`, `attention_mask`,
  `token_type_ids`, output `last_hidden_state` (token embeddings; pooling and
  normalisation happen in consumer.embedding.embedders);
- `model-int8.onnx`: the same graph with dynamic int8 quantisation;
- `tokenizer.json`: the model's tokenizer;
- `export.json`: how it was made.

The int8 recipe: `quantize_dynamic(per_channel=True, op_types_to_quantize=["MatMul"])`
on every weight MatMul except the feed-forward up-projections (`intermediate.dense`).
Those are the most sensitive to per-tensor activation quantisation: quantising them
too is ~30% faster but drops the cosine with torch's vectors to ~0.96 on very short
texts ("ok"); keeping them fp32 gives >= 0.98 on every text we measured.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

import structlog

from consumer.embedding.model_files import packaged_model_path

log = structlog.get_logger(__name__)

# Bump when the export or quantisation recipe changes: old caches are then ignored.
RECIPE_VERSION: Final = 1
FP32_FILE: Final = "model-fp32.onnx"
INT8_FILE: Final = "model-int8.onnx"
TOKENIZER_FILE: Final = "tokenizer.json"
META_FILE: Final = "export.json"
INPUT_NAMES: Final = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME: Final = "last_hidden_state"
# Weight MatMuls kept in fp32 by the int8 recipe (substring of the node name).
INT8_KEEP_FP32: Final = ("intermediate/dense",)
_WEIGHT_FILES: Final = ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json")

Variant = Literal["fp32", "int8"]


def model_fingerprint(model_path: Path) -> str:
    """sha256 over the weights, config and tokenizer (what the export depends on)."""
    digest = hashlib.sha256(f"recipe={RECIPE_VERSION}".encode())
    for name in _WEIGHT_FILES:
        path = model_path / name
        if not path.exists():
            continue
        digest.update(name.encode())
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def ensure_onnx_model(
    cache_dir: Path, *, model_path: Path | None = None, variant: Variant = "int8"
) -> Path:
    """The path of the cached ONNX model (`variant`), exporting it first if needed.

    Safe for concurrent processes: one exports while the others wait on a lock
    file, and the result appears by an atomic rename of a complete directory, so
    a crash mid-export leaves nothing a later call would trust.
    """
    if model_path is None:
        model_path = packaged_model_path()
    fingerprint = model_fingerprint(model_path)
    target = cache_dir / f"minilm-onnx-{fingerprint[:16]}"
    wanted = target / (INT8_FILE if variant == "int8" else FP32_FILE)
    if _complete(target):
        return wanted
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _locked(cache_dir / ".export.lock"):
        if _complete(target):  # another process finished while we waited
            return wanted
        staging = Path(tempfile.mkdtemp(prefix=".export-", dir=cache_dir))
        try:
            started = time.monotonic()
            export_model(model_path, staging)
            (staging / META_FILE).write_text(
                json.dumps(
                    {
                        "recipe_version": RECIPE_VERSION,
                        "fingerprint": fingerprint,
                        "source": str(model_path),
                        "int8_kept_fp32": list(INT8_KEEP_FP32),
                    },
                    indent=2,
                ),
                encoding="utf-8",
            )
            if target.exists():  # a leftover without export.json: not trusted
                shutil.rmtree(target)
            os.replace(staging, target)
            log.info(
                "onnx_model_exported",
                path=str(target),
                seconds=round(time.monotonic() - started, 2),
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return wanted


def _complete(target: Path) -> bool:
    return all((target / name).is_file() for name in (FP32_FILE, INT8_FILE, TOKENIZER_FILE))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def export_model(model_path: Path, out_dir: Path) -> None:
    """Write model-fp32.onnx, model-int8.onnx and tokenizer.json into `out_dir`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    fp32 = out_dir / FP32_FILE
    _export_fp32(model_path, fp32)
    quantize_int8(fp32, out_dir / INT8_FILE)
    shutil.copyfile(model_path / TOKENIZER_FILE, out_dir / TOKENIZER_FILE)


def _export_fp32(model_path: Path, out_file: Path) -> None:
    import warnings

    import torch
    from transformers import AutoModel

    # Eager attention: the SDPA path may drop an all-ones mask while tracing,
    # which would bake "no padding" into the graph.
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager")
    model.eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state

    # A padded example batch, so the mask path is traced with real padding.
    input_ids = torch.tensor(
        [[101, 2000, 2001, 2002, 102, 0, 0, 0], [101, 2003, 2004, 2005, 2006, 2007, 2008, 102]]
    )
    attention_mask = (input_ids != 0).long()
    token_type_ids = torch.zeros_like(input_ids)
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUT_NAMES, OUTPUT_NAME)}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TokenEmbeddings(model),
            (input_ids, attention_mask, token_type_ids),
            str(out_file),
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes=dynamic_axes,
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )


def quantize_int8(fp32_file: Path, out_file: Path) -> None:
    """Dynamic int8 (per-channel weights, per-tensor uint8 activations) on the
    weight MatMuls, except those named in INT8_KEEP_FP32."""
    import logging

    import onnx

    # onnxruntime ships no type information.
    quantization: Any = importlib.import_module("onnxruntime.quantization")

    graph = onnx.load(str(fp32_file), load_external_data=False).graph
    initializers = {init.name for init in graph.initializer}
    keep = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul"
        and any(part in node.name for part in INT8_KEEP_FP32)
        and node.input[1] in initializers
    ]
    # The quantiser logs a "consider pre-processing" warning through the root logger.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantization.quantize_dynamic(
            str(fp32_file),
            str(out_file),
            per_channel=True,
            weight_type=quantization.QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep,
        )
    finally:
        root.setLevel(level)
