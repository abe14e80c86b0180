"""A record whose processing keeps failing for an unclassified reason is
dead-lettered after bounded retries; its batch-mates are decided normally."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from consumer.app import ConsumerService
from consumer.engine.dedup import DedupEngine
from consumer.engine.recent import RecentCache
from consumer.engine.thresholds import ThresholdPolicy
from consumer.errors import PartitionsLost
from consumer.pipeline import BatchProcessor
from consumer.settings import RetrySettings, TopicSettings
from consumer.store.edge import EdgeMemoryStore
from consumer.typing import Vectors
from schemas import DeadLetterHeaders, MemoryDecisionEvent

from .helpers import DEFAULT_BANDS, FakeEmbedder, FakePublisher, event_dict, make_record

TOPICS = TopicSettings(accepted="a", merged="m", skipped="s", dlq="d", create=False)
# Short backoffs: the tests wait through every retry.
QUICK_RETRY = RetrySettings(initial_backoff_s=0.01, max_backoff_s=0.02, poison_max_attempts=3)


class BrittleEmbedder(FakeEmbedder):
    """Fails (with a bug, not an outage) on one particular text."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if any("tokenizer-bomb" in text for text in texts):
            self.failures += 1
            raise ValueError("index out of range in the tokenizer")
        return await super().embed(texts)


def service_with(
    store: EdgeMemoryStore, embedder: FakeEmbedder, publisher: FakePublisher, retry: RetrySettings
) -> ConsumerService:
    engine = DedupEngine(
        store=store,
        embedder=embedder,
        policy=ThresholdPolicy(default=DEFAULT_BANDS),
        recent=RecentCache(ttl_s=300, max_entries=100),
    )
    processor = BatchProcessor(
        engine=engine,
        store=store,
        publisher=publisher,
        topics=TOPICS,
        model_id="fake",
        max_event_bytes=4096,
    )
    return ConsumerService(
        processor=processor, store=store, engine=engine, retry=retry, input_topic="in"
    )


async def test_poison_record_is_dead_lettered_and_the_rest_decided(
    store: EdgeMemoryStore,
) -> None:
    embedder = BrittleEmbedder()
    publisher = FakePublisher()
    service = service_with(store, embedder, publisher, QUICK_RETRY)
    records = [
        make_record(event_dict(event_id="g1", content="User bakes sourdough"), offset=0),
        make_record(event_dict(event_id="p1", content="tokenizer-bomb text"), offset=1),
        make_record(event_dict(event_id="g2", content="User sails on weekends"), offset=2),
    ]
    summary = await service.handle(records)

    assert summary.dead_letters["processing_error"] == 1
    assert summary.decisions["accepted"] == 2
    assert service.poisoned == 1
    # One failure for the whole batch, then three for the record on its own.
    assert embedder.failures == 1 + QUICK_RETRY.poison_max_attempts
    dead = [r for r in publisher.published if r.topic == TOPICS.dlq]
    [letter] = dead
    assert letter.value == records[1].value
    headers = DeadLetterHeaders.model_validate(
        {k: v for k, v in letter.headers.items() if k in DeadLetterHeaders.model_fields}
    )
    assert headers.error_code.value == "processing_error"
    assert "ValueError" in headers.error_detail
    decided = {
        MemoryDecisionEvent.model_validate_json(r.value).event_id
        for r in publisher.published
        if r.topic != TOPICS.dlq
    }
    assert decided == {"g1", "g2"}


class EvictedEmbedder(FakeEmbedder):
    """Stands for any step that learns mid-batch that the group evicted this consumer."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        raise PartitionsLost("evicted (injected)")


async def test_lost_partitions_are_neither_retried_nor_dead_lettered(
    store: EdgeMemoryStore,
) -> None:
    """The batch belongs to the partitions' next owner: nothing is published, and
    no record of it is mistaken for poison."""
    embedder = EvictedEmbedder()
    publisher = FakePublisher()
    service = service_with(store, embedder, publisher, QUICK_RETRY)
    records = [
        make_record(event_dict(event_id="g1", content="User bakes sourdough"), offset=0),
        make_record(event_dict(event_id="g2", content="User sails on weekends"), offset=1),
    ]
    with pytest.raises(PartitionsLost):
        await service.handle(records)
    assert embedder.calls == 1
    assert (service.poisoned, service.retries) == (0, 0)
    assert publisher.published == []
