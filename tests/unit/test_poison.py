"""A record whose processing keeps failing for an unclassified reason is
dead-lettered after bounded retries; its batch-mates are decided normally."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from consumer.app.runner import ConsumerService
from consumer.domain.dedup import DedupEngine
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import ThresholdPolicy
from consumer.errors import PartitionsLost, PublishFailed, PublishRejected
from consumer.kafka.records import OutgoingRecord
from consumer.ports import MemoryStore, Vectors
from consumer.settings import RetrySettings, TopicSettings
from consumer.state.durable import DurableStore
from schemas import DeadLetterHeaders, MemoryDecisionEvent

from .helpers import (
    DEFAULT_BANDS,
    FakeEmbedder,
    FakePublisher,
    event_dict,
    make_processor,
    make_record,
)

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
    store: MemoryStore, embedder: FakeEmbedder, publisher: FakePublisher, retry: RetrySettings
) -> ConsumerService:
    engine = DedupEngine(
        store=store,
        embedder=embedder,
        policy=ThresholdPolicy(default=DEFAULT_BANDS),
        recent=RecentCache(ttl_s=300, max_entries=100),
    )
    processor = make_processor(
        engine=engine,
        store=store,
        publisher=publisher,
        topics=TOPICS,
        model_id="fake",
        max_event_bytes=4096,
    )
    return ConsumerService(
        processor=processor,
        state=DurableStore(store),
        engine=engine,
        retry=retry,
        input_topic="in",
    )


async def test_poison_record_is_dead_lettered_and_the_rest_decided(
    store: MemoryStore,
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
        self.tries = 0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.tries += 1
        raise PartitionsLost("evicted (injected)")


async def test_lost_partitions_are_neither_retried_nor_dead_lettered(
    store: MemoryStore,
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
    assert embedder.tries == 1
    assert (service.poisoned, service.retries) == (0, 0)
    assert publisher.published == []


class RefusingPublisher(FakePublisher):
    """The broker refuses every record answering event p1 for what it is."""

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]:
        if any(b'"p1"' in r.value for r in records if r.topic != TOPICS.dlq):
            self.attempts.append(list(records))
            raise PublishRejected("broker refused a record: MessageSizeTooLargeError")
        return await super().publish_all(records)


async def test_a_permanent_refusal_is_dead_lettered_without_retrying(
    store: MemoryStore,
) -> None:
    publisher = RefusingPublisher()
    service = service_with(store, FakeEmbedder(), publisher, QUICK_RETRY)
    records = [
        make_record(event_dict(event_id="g1", content="User bakes sourdough"), offset=0),
        make_record(event_dict(event_id="p1", content="User sails on weekends"), offset=1),
    ]
    summary = await service.handle(records)
    assert summary.dead_letters == {"processing_error": 1}
    assert service.retries == 0
    # The batch once, then each record alone once: no attempt repeats a refusal.
    alone = [
        a
        for a in publisher.attempts
        if any(b'"p1"' in r.value and r.topic != TOPICS.dlq for r in a)
    ]
    assert len(alone) == 2
    [letter] = [r for r in publisher.published if r.topic == TOPICS.dlq]
    assert "PublishRejected after 1 attempt:" in letter.headers["error_detail"]


async def test_shutdown_ends_a_retry_wait_and_leaves_the_batch_uncommitted(
    store: MemoryStore,
) -> None:
    """A batch retrying a broker that does not answer would hold SIGTERM for up to
    retry.max_elapsed_s: shutdown gives it up instead (it is redelivered)."""
    publisher = FakePublisher()
    publisher.fail_next = 1_000
    patient = RetrySettings(initial_backoff_s=0.2, max_backoff_s=5.0, max_elapsed_s=600.0)
    service = service_with(store, FakeEmbedder(), publisher, patient)
    handling = asyncio.create_task(
        service.handle([make_record(event_dict(event_id="g1"), offset=0)])
    )
    while service.retries < 2:
        await asyncio.sleep(0.05)
    started = time.monotonic()
    service.stop_retrying()
    with pytest.raises(PublishFailed):
        await asyncio.wait_for(handling, timeout=5)
    assert time.monotonic() - started < 1.0
    assert publisher.published == []
