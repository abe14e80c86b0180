"""Embedding backends. The model loads once at start-up and runs on worker threads
of its own, so the event loop keeps serving heartbeats and publishes.

- `SentenceTransformerEmbedder` (backend `torch`): sentence-transformers on torch.
- `OnnxEmbedder` (backends `onnx-int8`, `onnx-fp32`): the same model exported to
  ONNX once (consumer.embedding.onnx_export) and run with onnxruntime and tokenizers; mean
  pooling and L2 normalisation as in sentence-transformers.

`load_embedder(settings, data_dir=...)` builds the configured one.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import structlog

from consumer.domain.normalize import subject_form
from consumer.embedding.model_files import packaged_model_path
from consumer.embedding.onnx_export import TOKENIZER_FILE, ensure_onnx_model
from consumer.errors import EmbedderUnavailable
from consumer.ports import Embedder, Vectors

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

    from consumer.settings import EmbeddingSettings

log = structlog.get_logger(__name__)


class SentenceTransformerEmbedder:
    def __init__(self, *, model: Any, model_id: str, batch_size: int) -> None:
        self._model = model
        self._model_id = model_id
        self._batch_size = batch_size
        dimension = model.get_embedding_dimension()
        self._dimension = int(dimension)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")

    @classmethod
    async def load(
        cls,
        *,
        model_path: Path | None,
        model_id: str,
        batch_size: int,
        torch_threads: int = 0,
    ) -> SentenceTransformerEmbedder:
        """Load off the event loop; never reaches for a model hub."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        path = model_path or packaged_model_path()

        def build() -> Any:
            import torch
            from sentence_transformers import SentenceTransformer

            if torch_threads > 0:
                torch.set_num_threads(torch_threads)
            return SentenceTransformer(str(path), device="cpu")

        model = await asyncio.to_thread(build)
        log.info("model_loaded", model=model_id, path=str(path))
        return cls(model=model, model_id=model_id, batch_size=batch_size)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)

        def encode() -> Vectors:
            # Batches by token count (`plan_batches`), as the ONNX backends: the
            # model pads each batch to its longest text, and sentence-transformers
            # would group by characters (7-19% slower on the benchmark's texts).
            tokenized = self._model.tokenizer(
                list(texts), truncation=True, max_length=self._model.max_seq_length
            )
            lengths = [len(ids) for ids in tokenized["input_ids"]]
            vectors = np.empty((len(texts), self._dimension), dtype=np.float32)
            for batch in plan_batches(lengths, self._batch_size):
                vectors[batch] = self._model.encode(
                    [texts[i] for i in batch],
                    batch_size=len(batch),
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            return vectors

        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, encode)
        except (RuntimeError, MemoryError, OSError) as exc:
            raise EmbedderUnavailable(f"embedding failed: {type(exc).__name__}") from exc

    async def close(self) -> None:
        self._executor.shutdown(wait=True)


# all-MiniLM-L6-v2's max_seq_length in sentence-transformers (the packaged
# tokenizer.json itself truncates at 128 and pads every text to 128).
MAX_SEQ_LENGTH: Final = 256


def mean_pool_normalize(token_embeddings: Any, attention_mask: Any) -> Vectors:
    """Mean over the tokens the mask keeps, then L2 normalisation: what
    sentence-transformers' Pooling(mean) + Normalize modules compute.

    token_embeddings: (batch, sequence, dimension); attention_mask: (batch, sequence).
    """
    tokens = np.asarray(token_embeddings, dtype=np.float32)
    mask = np.asarray(attention_mask, dtype=np.float32)[:, :, None]
    summed = (tokens * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    normalized: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return normalized


def load_tokenizer(path: Path, max_length: int = MAX_SEQ_LENGTH) -> Tokenizer:
    """The model's tokenizer, truncating at `max_length`; OnnxEmbedder pads each
    batch itself (to the batch's longest text)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def plan_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices of a call's texts, grouped into model batches by token count.

    Longest first, at most `batch_size` texts a batch, and a new batch where the
    token count drops once the batch holds `batch_size // 8` texts: a batch costs
    about its size times its longest text, so texts of one length share a batch
    with no padding, and only short runs are merged (a batch has a fixed cost).
    Depends on the lengths and `batch_size` only (a quantised model's vectors
    depend on their batch: the same call always gets the same batches)."""
    order = sorted(range(len(lengths)), key=lambda index: -lengths[index])
    enough_to_cut = max(1, batch_size // 8)
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in order:
        if batch and (
            len(batch) >= batch_size
            or (len(batch) >= enough_to_cut and lengths[index] < lengths[batch[-1]])
        ):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime. `session` is an onnxruntime InferenceSession
    (or anything with its `get_inputs()` and a thread-safe `run()`) returning token
    embeddings.

    A call's texts are tokenised together and grouped by token count into batches
    of at most `batch_size` (`plan_batches`: little or no padding); `workers`
    threads run those batches side by side, each on one core (the session runs
    single-threaded). Batches of a call and of later calls queue in call order.
    One batch per core rather than every core on each batch: a core taken by the
    event loop or the broker for a moment then delays one batch, not every
    operator of every batch at a thread barrier. How texts fall into batches
    depends only on the call's texts and `batch_size`, never on the worker count
    or timing, so a quantised model (whose vectors depend on their batch) stays
    deterministic."""

    def __init__(
        self,
        *,
        session: Any,
        tokenizer: Tokenizer,
        model_id: str,
        batch_size: int,
        dimension: int | None = None,
        workers: int = 1,
    ) -> None:
        self._session = session
        padding = tokenizer.padding
        self._pad_id = int(padding["pad_id"]) if padding else 0
        # Token counts decide the batches; each batch is padded in _run_encodings.
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._model_id = model_id
        self._batch_size = batch_size
        self._input_names = {item.name for item in session.get_inputs()}
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embedder")
        # One thread: calls are tokenised, so their batches queued, in call order.
        self._tokenizer_executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="embedder-tokenizer"
        )
        probe = self._tokenizer.encode_batch(["dimension probe"])
        self._dimension = dimension or int(self._run_encodings(probe).shape[1])

    @classmethod
    async def load(
        cls,
        *,
        cache_dir: Path,
        model_path: Path | None,
        model_id: str,
        batch_size: int,
        quantized: bool = True,
        threads: int = 0,
    ) -> OnnxEmbedder:
        """Export (first run only, needs torch) and load off the event loop.
        `threads`: batches run at once (0: one per CPU this process may use)."""

        def build() -> OnnxEmbedder:
            # onnxruntime ships no type information.
            ort: Any = importlib.import_module("onnxruntime")

            model_file = ensure_onnx_model(
                cache_dir, model_path=model_path, variant="int8" if quantized else "fp32"
            )
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.inter_op_num_threads = 1
            # Each run on its calling worker thread alone: parallel across batches.
            options.intra_op_num_threads = 1
            session = ort.InferenceSession(
                str(model_file), options, providers=["CPUExecutionProvider"]
            )
            tokenizer = load_tokenizer(model_file.parent / TOKENIZER_FILE)
            workers = threads or available_cpus()
            embedder = cls(
                session=session,
                tokenizer=tokenizer,
                model_id=model_id,
                batch_size=batch_size,
                workers=workers,
            )
            log.info(
                "model_loaded",
                model=model_id,
                backend="onnx-int8" if quantized else "onnx-fp32",
                path=str(model_file),
                workers=workers,
            )
            return embedder

        return await asyncio.to_thread(build)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def _run_encodings(self, encodings: Sequence[Encoding]) -> Vectors:
        """Blocking: pad one batch to its longest text and run it."""
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = encoding.attention_mask
            types[row, :length] = encoding.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = types
        (tokens,) = self._session.run(["last_hidden_state"], feed)
        return mean_pool_normalize(tokens, mask)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        cleaned = [text.strip() for text in texts]
        loop = asyncio.get_running_loop()
        encodings = await loop.run_in_executor(
            self._tokenizer_executor, self._tokenizer.encode_batch, cleaned
        )
        batches = plan_batches([len(encoding.ids) for encoding in encodings], self._batch_size)
        runs = [
            loop.run_in_executor(self._executor, self._run_encodings, [encodings[i] for i in batch])
            for batch in batches
        ]
        # Every batch's outcome is collected (none left unretrieved); the first
        # failure is the call's.
        outcomes = await asyncio.gather(*runs, return_exceptions=True)
        failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
        if failure is not None:
            if isinstance(failure, (ValueError, TypeError)) or not isinstance(failure, Exception):
                raise failure
            # onnxruntime raises its own Exception subclasses
            raise EmbedderUnavailable(f"embedding failed: {type(failure).__name__}") from failure
        stacked = np.concatenate([o for o in outcomes if not isinstance(o, BaseException)])
        order = np.fromiter((i for batch in batches for i in batch), dtype=np.int64)
        result: Vectors = np.empty_like(stacked)
        result[order] = stacked
        return result

    async def close(self) -> None:
        self._tokenizer_executor.shutdown(wait=True)
        self._executor.shutdown(wait=True)


CGROUP_ROOT: Final = Path("/sys/fs/cgroup")


def available_cpus(cgroup_root: Path = CGROUP_ROOT) -> int:
    """CPUs this process may use: its affinity, capped by a cgroup CPU quota (a
    container limited to 2 CPUs on a 64-core host runs 2 model batches at once,
    not 64)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without affinity
        count = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        count = min(count, math.ceil(quota))
    return max(1, count)


def cgroup_cpu_quota(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs' worth of time the cgroup may use per period; None without a quota.
    cgroup v2 `cpu.max` ("<quota> <period>" or "max <period>"), else v1
    `cpu/cpu.cfs_quota_us` over `cpu/cpu.cfs_period_us` (-1: none)."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        pass
    else:
        return None if quota == "max" else _ratio(quota, period)
    try:
        quota = (root / "cpu" / "cpu.cfs_quota_us").read_text()
        period = (root / "cpu" / "cpu.cfs_period_us").read_text()
    except OSError:
        return None
    return _ratio(quota, period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        share = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return share if share > 0 else None


class SubjectFormEmbedder:
    """Embeds each text's `subject_form`: the user named one way ("I like X",
    "User likes X" and "The user likes X" embed alike)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return await self._inner.embed([subject_form(text) for text in texts])

    async def close(self) -> None:
        await self._inner.close()


def with_subject_form(embedder: Embedder, settings: EmbeddingSettings) -> Embedder:
    """`embedder` behind `SubjectFormEmbedder` when `settings.same_subject` (once)."""
    if not settings.same_subject or isinstance(embedder, SubjectFormEmbedder):
        return embedder
    return SubjectFormEmbedder(embedder)


async def load_embedder(settings: EmbeddingSettings, *, data_dir: Path) -> Embedder:
    """The embedder `settings.backend` names. ONNX models are exported once and
    cached under `settings.onnx_cache_dir`, else `data_dir / "models"`."""
    model: Embedder
    if settings.backend == "torch":
        model = await SentenceTransformerEmbedder.load(
            model_path=settings.model_path,
            model_id=settings.model_id,
            batch_size=settings.batch_size,
            torch_threads=settings.torch_threads,
        )
    else:
        model = await OnnxEmbedder.load(
            cache_dir=settings.onnx_cache_dir or data_dir / "models",
            model_path=settings.model_path,
            model_id=settings.model_id,
            batch_size=settings.batch_size,
            quantized=settings.backend == "onnx-int8",
            threads=settings.onnx_threads,
        )
    return with_subject_form(model, settings)
