"""Fakes and builders shared by the unit tests: no Kafka, no real model."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from consumer.domain.models import Candidate, MemoryRecord
from consumer.domain.normalize import normalize_content
from consumer.domain.thresholds import Bands
from consumer.errors import PublishFailed
from consumer.kafka.records import InputRecord, OutgoingRecord
from consumer.ports import Vectors
from consumer.service.validation import Rejection, parse_record
from schemas import scope_key

DIMENSION = 32
INPUT_TOPIC = "memory.extracted"
FIXED_NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
RECORD_TS_MS = 1_700_000_000_000
DEFAULT_BANDS = Bands(duplicate_threshold=0.90, merge_threshold=0.80)


def unit_vector(similarity: float, axis: int, dimension: int = DIMENSION) -> np.ndarray:
    """A unit vector whose cosine with e0 is `similarity`; the rest lies on `axis`.

    Two such vectors on different axes have cosine s1 * s2 with each other.
    """
    assert axis != 0
    vector = np.zeros(dimension, dtype=np.float32)
    vector[0] = similarity
    vector[axis] = math.sqrt(max(0.0, 1.0 - similarity * similarity))
    return vector


def base_vector(dimension: int = DIMENSION) -> np.ndarray:
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


class FakePublisher:
    """consumer.ports.RecordPublisher that keeps what it was asked to publish."""

    def __init__(self) -> None:
        self.published: list[OutgoingRecord] = []
        self.attempts: list[list[OutgoingRecord]] = []
        self.fail_next = 0

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> None:
        self.attempts.append(list(records))
        if self.fail_next > 0:
            self.fail_next -= 1
            raise PublishFailed("broker did not acknowledge (fake)")
        self.published.extend(records)


_DROP = object()


def event_dict(**overrides: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "schema_version": 1,
        "event_id": "evt-1",
        "tenant_id": "tenant-a",
        "namespace": "prefs",
        "content": "The user prefers dark mode",
    }
    event.update(overrides)
    return {k: v for k, v in event.items() if v is not _DROP}


def stored_memory(
    *, memory_id: str, content: str, content_hash: str, vector: list[float] | None, **fields: Any
) -> MemoryRecord:
    """A memory as first stored (tenant-a/prefs, no merges yet); `fields` override."""
    defaults: dict[str, Any] = {
        "tenant_id": "tenant-a",
        "namespace": "prefs",
        "importance": 0.5,
        "topics": [],
        "entities": [],
        "merged_event_ids": [],
        "origin_event_id": "e0",
        "created_at": FIXED_NOW,
        "updated_at": FIXED_NOW,
    }
    return MemoryRecord(
        memory_id=memory_id,
        content=content,
        content_hash=content_hash,
        vector=vector,
        **{**defaults, **fields},
    )


def drop() -> Any:
    """Marker for event_dict: leave this field out."""
    return _DROP


def make_record(
    event: dict[str, Any] | None = None,
    *,
    value: bytes | object | None = _DROP,
    partition: int = 0,
    offset: int = 0,
    topic: str = INPUT_TOPIC,
    timestamp_ms: int = RECORD_TS_MS,
    headers: tuple[tuple[str, bytes], ...] = (),
) -> InputRecord:
    event = event if event is not None else event_dict()
    if value is _DROP:
        value = json.dumps(event).encode()
    key = scope_key(str(event.get("tenant_id", "t")), str(event.get("namespace", "n"))).encode()
    return InputRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        key=key,
        value=value,  # type: ignore[arg-type]
        timestamp_ms=timestamp_ms,
        headers=headers,
    )


def make_candidate(*, partition: int = 0, offset: int = 0, **overrides: Any) -> Candidate:
    parsed = parse_record(
        make_record(event_dict(**overrides), partition=partition, offset=offset),
        max_event_bytes=64 * 1024,
    )
    assert not isinstance(parsed, Rejection), parsed
    return parsed
