"""Test doubles for code built around the service: the in-memory store and a
deterministic fake embedder, the ones the project's own tests use.

    from consumer.testing import FakeEmbedder, InMemoryStore, base_vector, unit_vector

    embedder = FakeEmbedder()                      # 32 dimensions
    embedder.set("User likes tea", base_vector())
    embedder.set("User enjoys tea", unit_vector(0.85, axis=1))  # cosine 0.85 with the first
    store = InMemoryStore()
    await store.start(embedder.dimension)

Both implement the ports the service is wired from (consumer.ports.Embedder,
consumer.ports.MemoryStore), so they go wherever the real ones go: a DedupEngine,
a BatchProcessor, or `create_app(settings, embedder=..., store=...)`. Nothing
here loads a model or opens a file. docs/development.md shows an example.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from consumer.domain.normalize import normalize_content
from consumer.ports import Vectors
from consumer.state.memory import InMemoryStore

__all__ = ["DIMENSION", "FakeEmbedder", "InMemoryStore", "base_vector", "unit_vector"]

DIMENSION = 32


def unit_vector(similarity: float, axis: int, dimension: int = DIMENSION) -> np.ndarray:
    """A unit vector whose cosine with e0 (`base_vector`) is `similarity`; the rest
    lies on `axis`. Two such vectors on different axes have cosine s1 * s2."""
    assert axis != 0
    vector = np.zeros(dimension, dtype=np.float32)
    vector[0] = similarity
    vector[axis] = math.sqrt(max(0.0, 1.0 - similarity * similarity))
    return vector


def base_vector(dimension: int = DIMENSION) -> np.ndarray:
    """e0: the vector `unit_vector` measures similarity against."""
    vector = np.zeros(dimension, dtype=np.float32)
    vector[0] = 1.0
    return vector


class FakeEmbedder:
    """consumer.ports.Embedder with vectors chosen by the test.

    Texts without a chosen vector get a fresh one-hot vector (orthogonal to every
    other text), allocated from the highest axis down. Every call is recorded.
    """

    def __init__(self, dimension: int = DIMENSION, model_id: str = "fake/unit-embedder") -> None:
        self._dimension = dimension
        self._model_id = model_id
        self._vectors: dict[str, np.ndarray] = {}
        self._next_free_axis = dimension - 1
        self.calls: list[list[str]] = []
        self.closed = False

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def texts_embedded(self) -> list[str]:
        return [text for call in self.calls for text in call]

    def set(self, text: str, vector: np.ndarray) -> None:
        """Choose the vector for `text` (normalised the way the engine does)."""
        norm = float(np.linalg.norm(vector))
        self._vectors[normalize_content(text)] = (vector / norm).astype(np.float32)

    def _vector(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            vector = np.zeros(self._dimension, dtype=np.float32)
            vector[self._next_free_axis] = 1.0
            self._next_free_axis -= 1
            self._vectors[text] = vector
        return self._vectors[text]

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack([self._vector(text) for text in texts]).astype(np.float32)

    async def close(self) -> None:
        self.closed = True
