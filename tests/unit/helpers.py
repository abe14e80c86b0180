"""Fakes and builders shared by the unit tests: no Kafka, no real model. The store
and embedder doubles are the shipped ones (consumer.testing)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from consumer.compaction.plan import local_judge
from consumer.domain.dedup import DedupEngine
from consumer.domain.models import Candidate, MemoryRecord
from consumer.domain.thresholds import Bands
from consumer.errors import PublishFailed
from consumer.kafka.publisher import DEFAULT_MAX_REQUEST_BYTES
from consumer.kafka.records import InputRecord, OutgoingRecord
from consumer.observability.metrics import ServiceMetrics
from consumer.ports import MembershipFence, MemoryStore, RecordPublisher
from consumer.service.command_processor import CommandProcessor
from consumer.service.periodic_compaction import PeriodicCompaction
from consumer.service.processor import BatchProcessor
from consumer.service.retention import DecisionRetention
from consumer.service.validation import parse_record
from consumer.settings import CompactionSettings, RetentionSettings, TopicSettings
from consumer.state.changelog import Changelog
from consumer.state.durable import DurableStore
from consumer.testing import DIMENSION, FakeEmbedder, InMemoryStore, base_vector, unit_vector
from schemas import scope_key

# The shipped doubles, re-exported for the tests that import them from here.
__all__ = [
    "DIMENSION",
    "FakeEmbedder",
    "InMemoryStore",
    "base_vector",
    "unit_vector",
]

INPUT_TOPIC = "memory.extracted"
FIXED_NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
RECORD_TS_MS = 1_700_000_000_000
DEFAULT_BANDS = Bands(duplicate_threshold=0.90, merge_threshold=0.80)


class FakeScorer:
    """consumer.domain.cross_verifier.PairScorer with P(same fact) chosen per pair
    (default 0.5); every call is recorded."""

    def __init__(self, probabilities: dict[tuple[str, str], float] | None = None) -> None:
        self.chosen = dict(probabilities or {})
        self.calls: list[list[tuple[str, str]]] = []

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.calls.append(list(pairs))
        return [self.chosen.get(pair, 0.5) for pair in pairs]


class FakePublisher:
    """consumer.ports.RecordPublisher that keeps what it was asked to publish."""

    def __init__(self) -> None:
        self.published: list[OutgoingRecord] = []
        self.attempts: list[list[OutgoingRecord]] = []
        self.fail_next = 0

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]:
        self.attempts.append(list(records))
        if self.fail_next > 0:
            self.fail_next -= 1
            raise PublishFailed("broker did not acknowledge (fake)")
        # One log for every topic: each record's offset is its place among all published.
        first = len(self.published)
        self.published.extend(records)
        return list(range(first, len(self.published)))


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
    assert isinstance(parsed, Candidate), parsed
    return parsed


def make_processor(
    *,
    engine: DedupEngine,
    store: MemoryStore,
    publisher: RecordPublisher,
    topics: TopicSettings,
    model_id: str,
    max_event_bytes: int,
    changelog: Changelog | None = None,
    membership: MembershipFence | None = None,
    dimension: int = 0,
    metrics: ServiceMetrics | None = None,
    reconcile: bool = False,
    compaction: CompactionSettings | None = None,
    retention: RetentionSettings | None = None,
    max_record_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> BatchProcessor:
    """A batch processor with its parts, put together as consumer/app/factory.py does."""
    metrics = metrics or ServiceMetrics()
    state = DurableStore(store, changelog=changelog, membership=membership, dimension=dimension)
    commands = CommandProcessor(
        engine=engine,
        state=state,
        topics=topics,
        model_id=model_id,
        dimension=dimension,
        metrics=metrics,
    )
    periodic = (
        PeriodicCompaction(
            settings=compaction,
            state=state,
            commands=commands,
            publisher=publisher,
            guards=engine.guards_enabled,
            input_topic=topics.input,
            judge=local_judge(engine.verifier),
            dimension=dimension or engine.embedder.dimension,
        )
        if compaction is not None and compaction.periodic
        else None
    )
    kept = (
        DecisionRetention(settings=retention, state=state, metrics=metrics)
        if retention is not None and retention.decisions_hours is not None
        else None
    )
    return BatchProcessor(
        engine=engine,
        state=state,
        commands=commands,
        publisher=publisher,
        topics=topics,
        model_id=model_id,
        max_event_bytes=max_event_bytes,
        max_record_bytes=max_record_bytes,
        metrics=metrics,
        reconcile=reconcile,
        periodic=periodic,
        retention=kept,
    )
