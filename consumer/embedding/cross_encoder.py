"""The shipped cross-encoder on onnxruntime: P(same fact) for pairs of texts.

The model (``consumer/data/cross_encoder/model-int8.onnx``, an int8 pair
classifier fine-tuned from all-MiniLM-L6-v2 by tools/train_cross_encoder.py),
its tokenizer and ``model.json`` (input format, maximum length, the thresholds
chosen on the memory pairs' dev split, provenance and hashes) ship with the
package. Input: ``[CLS] normalize_content(existing) [SEP] normalize_content(new)
[SEP]``, truncated at the model's maximum length; output ``logits[:, 0]``, whose
sigmoid is P(same fact).

:class:`OnnxPairScorer` is the domain's ``PairScorer``
(consumer.domain.cross_verifier): blocking, one onnxruntime thread; a batch is
padded to its longest pair, and the service runs batches of one pair (see
``_BATCH``), so that a score never depends on the pairs decided beside it. The domain calls it from a worker thread, never on
the event loop; it is loaded once at start-up (:func:`load_cross_encoder`).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import time
from collections.abc import Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import structlog

from consumer.domain.cross_verifier import SCORE_CACHE_SIZE, CrossEncoderVerifier
from consumer.domain.normalize import normalize_content

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from consumer.settings import CrossEncoderSettings

__all__ = [
    "DEFAULT_MODEL_DIR",
    "CrossEncoderInfo",
    "OnnxPairScorer",
    "build_cross_encoder",
    "load_cross_encoder",
    "score_batch",
]

log = structlog.get_logger(__name__)

DEFAULT_MODEL_DIR: Final = Path(__file__).resolve().parents[1] / "data" / "cross_encoder"
INFO_FILE: Final = "model.json"
INFO_FORMAT: Final = "memdedup-cross-encoder/1"
# One pair per run: the int8 model quantizes its activations per run (dynamic
# quantization), so a pair's score would depend on the pairs batched beside it
# (by up to ~0.01 measured), and a decision on which events share a batch.
_BATCH: Final = 1


@dataclass(frozen=True, slots=True)
class CrossEncoderInfo:
    """What ``model.json`` says of the shipped model."""

    model_file: Path
    tokenizer_file: Path
    max_length: int
    model_sha256: str
    veto_below: float
    reworded_below: float
    rescue_from: float
    rescue_threshold: float
    verb_swap_from: float

    @classmethod
    def read(cls, directory: Path = DEFAULT_MODEL_DIR) -> CrossEncoderInfo:
        document = json.loads((directory / INFO_FILE).read_text(encoding="utf-8"))
        if document.get("format") != INFO_FORMAT:
            raise ValueError(f"{directory / INFO_FILE} is not a {INFO_FORMAT} document")
        return cls(
            model_file=directory / document["model"],
            tokenizer_file=directory / document["tokenizer"],
            max_length=int(document["max_length"]),
            model_sha256=str(document["model_sha256"]),
            veto_below=float(document["veto_below"]),
            reworded_below=float(document["reworded_below"]),
            rescue_from=float(document["rescue_from"]),
            rescue_threshold=float(document["rescue_threshold"]),
            # Chosen after the other cuts: metadata written before names none.
            verb_swap_from=float(document.get("verb_swap_from", 1.0)),
        )

    def file_sha256(self) -> str:
        return hashlib.sha256(self.model_file.read_bytes()).hexdigest()


class OnnxPairScorer:
    """P(same fact) for (existing, new) pairs; blocking (see the module doc)."""

    def __init__(self, *, session: Any, tokenizer: Tokenizer, batch_size: int = _BATCH) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        self._input_names = {i.name for i in session.get_inputs()}

    @classmethod
    def load(
        cls, directory: Path = DEFAULT_MODEL_DIR, *, batch_size: int = _BATCH
    ) -> OnnxPairScorer:
        """Blocking: read the model and its tokenizer (callers on the event loop
        use `load_cross_encoder`)."""
        from tokenizers import Tokenizer

        # onnxruntime ships no type information.
        ort: Any = importlib.import_module("onnxruntime")
        info = CrossEncoderInfo.read(directory)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            str(info.model_file), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(info.tokenizer_file))
        tokenizer.enable_truncation(max_length=info.max_length)
        tokenizer.no_padding()
        return cls(session=session, tokenizer=tokenizer, batch_size=batch_size)

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        normalized = [(normalize_content(a), normalize_content(b)) for a, b in pairs]
        out: list[float] = []
        for start in range(0, len(normalized), self._batch_size):
            out += self._run(normalized[start : start + self._batch_size])
        return out

    def _run(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return score_batch(self._session, self._tokenizer, pairs, self._input_names)


def score_batch(
    session: Any, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], input_names: Set[str]
) -> list[float]:
    """P(same fact) of one batch of text pairs, padded to its longest pair (the
    texts as given: callers normalise). Shared with the training tools."""
    encodings = tokenizer.encode_batch(list(pairs))
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        length = len(encoding.ids)
        ids[row, :length] = encoding.ids
        mask[row, :length] = 1
        types[row, :length] = encoding.type_ids
    feed = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in input_names:
        feed["token_type_ids"] = types
    (logits,) = session.run(["logits"], feed)
    z = np.asarray(logits, dtype=np.float64)[:, 0]
    return [float(p) for p in 1.0 / (1.0 + np.exp(-z))]


def build_cross_encoder(
    settings: CrossEncoderSettings,
    scorer: OnnxPairScorer | None = None,
    *,
    cache_size: int = SCORE_CACHE_SIZE,
) -> CrossEncoderVerifier | None:
    """Blocking: the cross-encoder verifier `dedup.cross_encoder` asks for, with
    the shipped model unless `scorer` is given, caching `cache_size` pairs; None
    when it is off. Every cut comes from
    `settings`: build it here, not by hand."""
    if not settings.enabled:
        return None
    started = time.perf_counter()
    scorer = scorer or OnnxPairScorer.load()
    log.info(
        "cross_encoder_loaded",
        veto_below=settings.veto_below,
        rescue_from=settings.rescue_from,
        rescue_contained_from=settings.rescue_contained_from,
        rescue_threshold=settings.rescue_threshold,
        reworded_below=settings.reworded_below,
        verb_swap_from=settings.verb_swap_from,
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
    )
    return CrossEncoderVerifier(
        scorer,
        veto_below=settings.veto_below,
        rescue_from=settings.rescue_from,
        reworded_below=settings.reworded_below,
        rescue_contained_from=settings.rescue_contained_from,
        verb_swap_from=settings.verb_swap_from,
        cache_size=cache_size,
    )


async def load_cross_encoder(settings: CrossEncoderSettings) -> CrossEncoderVerifier | None:
    """`build_cross_encoder`, off the event loop (once, at start-up)."""
    if not settings.enabled:
        return None
    return await asyncio.to_thread(build_cross_encoder, settings)
