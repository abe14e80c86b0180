"""BatchProcessor: decisions and dead letters out, idempotent on redelivery."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consumer.domain.normalize import decision_id_for, normalize_content
from consumer.errors import PublishFailed
from consumer.kafka.records import InputRecord, OutgoingRecord
from consumer.ports import MemoryStore
from consumer.service import processor as pipeline
from consumer.service.processor import BatchProcessor
from consumer.settings import TopicSettings
from schemas import (
    DeadLetterCode,
    DeadLetterHeaders,
    Decision,
    DecisionReason,
    MemoryDecisionEvent,
    memory_urn,
)

from .conftest import EngineFactory
from .helpers import (
    INPUT_TOPIC,
    FakeEmbedder,
    FakePublisher,
    base_vector,
    event_dict,
    make_processor,
    make_record,
    unit_vector,
)

TOPICS = TopicSettings(
    accepted="t.accepted", merged="t.merged", skipped="t.skipped", dlq="t.dlq", create=False
)
MAX_BYTES = 4096
BASE = "The user prefers dark mode"
CLOSE = "The user prefers a dark theme in the editor"
SECRET = "Zyxwv-Quartz-Platypus-4417"


@pytest.fixture
def processor(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    publisher: FakePublisher,
) -> BatchProcessor:
    embedder.set(BASE, base_vector())
    embedder.set(CLOSE, unit_vector(0.85, axis=2))
    return make_processor(
        engine=make_engine(),
        store=store,
        publisher=publisher,
        topics=TOPICS,
        model_id=embedder.model_id,
        max_event_bytes=MAX_BYTES,
    )


def rec(event_id: str, content: str, offset: int, partition: int = 0, **extra: Any) -> InputRecord:
    return make_record(
        event_dict(event_id=event_id, content=content, **extra), partition=partition, offset=offset
    )


def decisions(records: list[OutgoingRecord]) -> list[MemoryDecisionEvent]:
    return [
        MemoryDecisionEvent.model_validate_json(r.value) for r in records if r.topic != TOPICS.dlq
    ]


def dead_letters(records: list[OutgoingRecord]) -> list[OutgoingRecord]:
    return [r for r in records if r.topic == TOPICS.dlq]


async def test_decision_events(processor: BatchProcessor, publisher: FakePublisher) -> None:
    batch = [
        rec("e1", BASE, 10, importance=0.3, topics=["ui"]),
        rec("e2", BASE.upper(), 11),
        rec("e3", CLOSE, 12, importance=0.9, topics=["editor"]),
    ]
    summary = await processor.process(batch)
    assert summary.records == 3
    assert summary.decisions == {"accepted": 1, "skipped": 1, "merged": 1}
    assert summary.total_decisions == 3
    assert summary.replayed == 0
    assert not summary.dead_letters

    assert [r.topic for r in publisher.published] == ["t.accepted", "t.skipped", "t.merged"]
    assert all(r.key == b"tenant-a/prefs" for r in publisher.published)
    accepted, skipped, merged = decisions(publisher.published)

    assert accepted.decision is Decision.ACCEPTED
    assert accepted.reason is DecisionReason.NEW
    assert accepted.decision_id == decision_id_for("e1")
    assert accepted.event_id == "e1"
    assert (accepted.tenant_id, accepted.namespace) == ("tenant-a", "prefs")
    assert accepted.model == "fake/unit-embedder"
    assert accepted.schema_version == 1
    assert accepted.memory_urn == memory_urn("tenant-a", "prefs", accepted.memory_id)
    assert accepted.memory.origin_event_id == "e1"
    assert (accepted.record.topic, accepted.record.partition, accepted.record.offset) == (
        INPUT_TOPIC,
        0,
        10,
    )
    assert [c.name.value for c in accepted.checks] == ["exact", "recent", "semantic"]

    assert skipped.decision is Decision.SKIPPED
    assert skipped.reason is DecisionReason.EXACT
    assert skipped.decision_id == decision_id_for("e2")
    assert skipped.memory_id == accepted.memory_id

    assert merged.decision is Decision.MERGED
    assert merged.decision_id == decision_id_for("e3")
    assert merged.memory_id == accepted.memory_id
    assert merged.similarity == pytest.approx(0.85, abs=1e-4)
    assert merged.threshold == 0.8
    assert merged.memory.merged_event_ids == ["e3"]
    assert merged.memory.topics == ["ui", "editor"]
    assert merged.memory.importance == 0.9
    assert merged.memory.content == BASE


async def test_outgoing_records_are_in_input_order_across_partitions(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    batch = [
        rec("p1-b", "second on p1", 5, partition=1, tenant_id="t1"),
        make_record(value=b"{bad", partition=0, offset=2),
        rec("p0-a", "first on p0", 1),
        rec("p1-a", "first on p1", 4, partition=1, tenant_id="t1"),
        rec("p0-c", "third on p0", 3),
    ]
    await processor.process(batch)
    positions = []
    for record in publisher.published:
        if record.topic == TOPICS.dlq:
            positions.append(
                (int(record.headers["source_partition"]), int(record.headers["source_offset"]))
            )
        else:
            event = MemoryDecisionEvent.model_validate_json(record.value)
            positions.append((event.record.partition, event.record.offset))
    assert positions == [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5)]


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (b"\xff\xfenot json", DeadLetterCode.INVALID_JSON),
        (
            json.dumps(event_dict(namespace="Bad", content=SECRET)).encode(),
            DeadLetterCode.SCHEMA_VIOLATION,
        ),
        (
            json.dumps(event_dict(schema_version=2, content=SECRET)).encode(),
            DeadLetterCode.UNSUPPORTED_SCHEMA_VERSION,
        ),
        (
            json.dumps(event_dict(content=SECRET + " " * MAX_BYTES)).encode(),
            DeadLetterCode.TOO_LARGE,
        ),
        (json.dumps(event_dict(content="  ... ")).encode(), DeadLetterCode.EMPTY_CONTENT),
    ],
)
async def test_dead_letters_carry_original_bytes_and_headers(
    processor: BatchProcessor,
    publisher: FakePublisher,
    store: MemoryStore,
    value: bytes,
    code: DeadLetterCode,
) -> None:
    record = make_record(value=value, partition=2, offset=77, headers=(("trace_id", b"abc"),))
    summary = await processor.process([record])
    assert summary.dead_letters == {code.value: 1}
    assert summary.total_decisions == 0
    [out] = publisher.published
    assert out.topic == "t.dlq"
    assert out.value == value
    assert out.key == record.key
    assert out.headers["error_code"] == code.value
    assert out.headers["source_topic"] == INPUT_TOPIC
    assert out.headers["source_partition"] == "2"
    assert out.headers["source_offset"] == "77"
    assert out.headers["error_detail"]
    assert SECRET not in out.headers["error_detail"]
    assert out.headers["trace_id"] == "abc"
    parsed = DeadLetterHeaders.from_kafka([(k, v.encode()) for k, v in out.headers.items()])
    assert parsed.error_code is code
    assert parsed.source_offset == 77
    assert await store.count_memories() == 0


async def test_tombstone_is_dead_lettered(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    await processor.process([make_record(value=None, offset=3)])
    [out] = publisher.published
    assert out.topic == TOPICS.dlq
    assert out.headers["error_code"] == "invalid_json"
    assert out.value == b""


async def test_a_dead_letter_too_big_for_a_record_keeps_the_first_bytes_size_and_digest(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    publisher: FakePublisher,
) -> None:
    import hashlib

    from consumer.kafka.publisher import record_size

    limit = 64 * 1024
    processor = make_processor(
        engine=make_engine(),
        store=store,
        publisher=publisher,
        topics=TOPICS,
        model_id=embedder.model_id,
        max_event_bytes=MAX_BYTES,
        max_record_bytes=limit,
    )
    value = b"{" + b"x" * (3 * limit)
    big_headers = tuple((f"h{i}", b"y" * 1024) for i in range(40))
    record = make_record(value=value, partition=1, offset=9, headers=big_headers)
    await processor.process([record])
    [out] = publisher.published
    assert out.topic == TOPICS.dlq
    assert record_size(out) <= limit
    assert out.headers["error_code"] == "too_large"
    assert out.headers["original_bytes"] == str(len(value))
    assert out.headers["original_sha256"] == hashlib.sha256(value).hexdigest()
    assert value.startswith(out.value)
    assert len(out.value) > limit // 2
    # The input's headers (40 KiB) would crowd out the body: the original keeps them.
    assert not any(name.startswith("h") for name in out.headers)
    assert (out.headers["source_partition"], out.headers["source_offset"]) == ("1", "9")
    assert out.content_type == "application/octet-stream"


async def test_a_dead_letter_that_fits_is_whole_and_says_nothing_of_size(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    value = b"{" + b"x" * (2 * MAX_BYTES)
    await processor.process([make_record(value=value, offset=1)])
    [out] = publisher.published
    assert out.headers["error_code"] == "too_large"
    assert out.value == value
    assert "original_bytes" not in out.headers
    assert "original_sha256" not in out.headers


async def test_dead_letter_gets_event_id_header_when_known(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    await processor.process([rec("evt-imp", BASE, 0, importance=7)])
    [out] = publisher.published
    assert out.headers["error_code"] == "schema_violation"
    assert out.headers["event_id"] == "evt-imp"


async def test_good_and_bad_records_in_one_batch(
    processor: BatchProcessor, publisher: FakePublisher, store: MemoryStore
) -> None:
    summary = await processor.process(
        [rec("e1", BASE, 0), make_record(value=b"[]", offset=1), rec("e2", "other", 2)]
    )
    assert summary.decisions == {"accepted": 2}
    assert summary.dead_letters == {"invalid_json": 1}
    assert [r.topic for r in publisher.published] == ["t.accepted", "t.dlq", "t.accepted"]
    assert await store.count_memories(0) == 2


async def test_redelivery_replays_byte_identical_decisions(
    processor: BatchProcessor,
    publisher: FakePublisher,
    store: MemoryStore,
    embedder: FakeEmbedder,
) -> None:
    batch = [
        rec("e1", BASE, 0),
        rec("e2", BASE + "!!", 1),
        rec("e3", CLOSE, 2),
        rec("e4", "something unrelated", 3),
        make_record(value=b"nope", offset=4),
    ]
    first = await processor.process(batch)
    first_out = list(publisher.published)
    memories = await store.count_memories()
    calls = len(embedder.calls)
    assert memories == 2

    publisher.published.clear()
    second = await processor.process(batch)
    assert second.replayed == 4
    assert second.total_decisions == 0
    assert second.dead_letters == first.dead_letters
    assert [(r.topic, r.key, r.value, r.headers) for r in publisher.published] == [
        (r.topic, r.key, r.value, r.headers) for r in first_out
    ]
    assert await store.count_memories() == memories
    assert len(embedder.calls) == calls
    merged = (await store.get_memories(0, [decisions(first_out)[0].memory_id])).popitem()[1]
    assert merged.merged_event_ids == ["e3"]


async def test_redelivery_into_a_fresh_consumer_replays_identically(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    processor: BatchProcessor,
    publisher: FakePublisher,
) -> None:
    """After a rebalance the new owner has an empty recent cache: still a replay."""
    batch = [rec("e1", BASE, 0), rec("e2", CLOSE, 1)]
    await processor.process(batch)
    first_out = [r.value for r in publisher.published]
    other_publisher = FakePublisher()
    fresh = make_processor(
        engine=make_engine(),
        store=store,
        publisher=other_publisher,
        topics=TOPICS,
        model_id=embedder.model_id,
        max_event_bytes=MAX_BYTES,
    )
    summary = await fresh.process(batch)
    assert summary.replayed == 2
    assert [r.value for r in other_publisher.published] == first_out


async def test_same_event_twice_in_one_batch(
    processor: BatchProcessor, publisher: FakePublisher, store: MemoryStore
) -> None:
    summary = await processor.process([rec("e1", BASE, 0), rec("e1", BASE, 1)])
    assert summary.decisions == {"accepted": 1}
    assert summary.replayed == 1
    first, second = publisher.published
    assert first.value == second.value
    assert first.topic == second.topic == "t.accepted"
    assert await store.count_memories() == 1


async def test_conflicting_event_id_across_batches(
    processor: BatchProcessor, publisher: FakePublisher, store: MemoryStore
) -> None:
    await processor.process([rec("e1", BASE, 0)])
    publisher.published.clear()
    conflicting = rec("e1", f"Entirely different {SECRET}", 1)
    summary = await processor.process([conflicting])
    assert summary.dead_letters == {"conflicting_event_id": 1}
    assert summary.total_decisions == 0
    assert summary.replayed == 0
    [out] = publisher.published
    assert out.topic == TOPICS.dlq
    assert out.value == conflicting.value
    assert out.headers["error_code"] == "conflicting_event_id"
    assert out.headers["source_offset"] == "1"
    assert out.headers["event_id"] == "e1"
    assert SECRET not in out.headers["error_detail"]
    assert await store.count_memories() == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"content": "Entirely different"},
        {"tenant_id": "tenant-b"},
        {"namespace": "other"},
    ],
)
async def test_conflicting_event_id_in_one_batch(
    processor: BatchProcessor, publisher: FakePublisher, changes: dict[str, str]
) -> None:
    fields: dict[str, Any] = {"content": BASE} | changes
    summary = await processor.process([rec("e1", BASE, 0), rec("e1", offset=1, **fields)])
    assert summary.decisions == {"accepted": 1}
    assert summary.dead_letters == {"conflicting_event_id": 1}
    accepted, dlq = publisher.published
    assert accepted.topic == "t.accepted"
    assert dlq.topic == TOPICS.dlq
    assert dlq.headers["source_offset"] == "1"


async def test_same_event_id_with_equivalent_content_is_a_replay(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    await processor.process([rec("e1", BASE, 0)])
    summary = await processor.process([rec("e1", "  " + BASE.upper() + ". ", 1)])
    assert summary.replayed == 1
    assert not summary.dead_letters
    assert publisher.published[0].value == publisher.published[1].value


async def test_a_partition_decided_in_segments_meets_what_earlier_segments_wrote(
    processor: BatchProcessor,
    publisher: FakePublisher,
    embedder: FakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At most two new texts per segment: each segment is written before the next
    is decided, and each segment's model call was started ahead, without texts
    that repeat an earlier segment's."""
    monkeypatch.setattr(pipeline, "SEGMENT_TEXTS", 2)
    tea = "The user drinks green tea every morning"
    batch = [
        rec("e1", BASE, 0),
        rec("e2", tea, 1),
        rec("e3", BASE, 2),  # e1's text: no model call, so still the first segment
        rec("e1", BASE, 3),  # e1 again: the same decision record
        rec("e2", f"Entirely different {SECRET}", 4),  # e2 with other content
        rec("e4", CLOSE, 5),  # a third new text: the second segment
        rec("e5", tea, 6),  # e2's text, now stored
    ]
    summary = await processor.process(batch)
    assert summary.decisions == {"accepted": 2, "skipped": 2, "merged": 1}
    assert summary.replayed == 1
    assert summary.dead_letters == {"conflicting_event_id": 1}
    assert embedder.calls == [
        [normalize_content(BASE), normalize_content(tea)],
        [normalize_content(CLOSE)],
    ]
    events = decisions(publisher.published)
    assert [(e.event_id, e.decision.value, e.reason.value) for e in events] == [
        ("e1", "accepted", "new"),
        ("e2", "accepted", "new"),
        ("e3", "skipped", "exact"),
        ("e1", "accepted", "new"),
        ("e4", "merged", "semantic"),
        ("e5", "skipped", "exact"),
    ]
    assert events[4].memory_id == events[0].memory_id
    accepted = [r.value for r in publisher.published if r.topic == "t.accepted"]
    assert accepted == [accepted[0], accepted[1], accepted[0]]  # e1, e2, e1 again
    [dead] = dead_letters(publisher.published)
    assert (dead.headers["error_code"], dead.headers["source_offset"]) == (
        "conflicting_event_id",
        "4",
    )


async def test_publish_failure_raises_and_retry_emits_identical_decisions(
    processor: BatchProcessor, publisher: FakePublisher, store: MemoryStore
) -> None:
    batch = [rec("e1", BASE, 0), rec("e2", CLOSE, 1), make_record(value=b"{", offset=2)]
    publisher.fail_next = 1
    with pytest.raises(PublishFailed):
        await processor.process(batch)
    assert publisher.published == []
    [attempted] = publisher.attempts
    memories = await store.count_memories()

    summary = await processor.process(batch)
    assert summary.replayed == 2
    assert [(r.topic, r.key, r.value, r.headers) for r in publisher.published] == [
        (r.topic, r.key, r.value, r.headers) for r in attempted
    ]
    assert await store.count_memories() == memories == 1
    accepted, merged = decisions(publisher.published)
    assert (accepted.decision, merged.decision) == (Decision.ACCEPTED, Decision.MERGED)
    assert merged.memory.merged_event_ids == ["e2"]


async def test_empty_batch_publishes_nothing(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    summary = await processor.process([])
    assert summary.records == 0
    assert publisher.published == []


async def test_dead_letter_with_null_header_value(
    processor: BatchProcessor, publisher: FakePublisher
) -> None:
    record = make_record(value=b"{bad", offset=9, headers=(("trace_id", None),))  # type: ignore[arg-type]
    summary = await processor.process([record])
    assert summary.dead_letters == {"invalid_json": 1}
    [out] = publisher.published
    assert out.topic == TOPICS.dlq
    assert out.headers["error_code"] == "invalid_json"


async def test_semantic_duplicate_of_stored_memory(
    processor: BatchProcessor, publisher: FakePublisher, embedder: FakeEmbedder
) -> None:
    near = "User likes dark themes"
    embedder.set(near, unit_vector(0.95, axis=1))
    await processor.process([rec("e1", BASE, 0)])
    summary = await processor.process([rec("e2", near, 1)])
    assert summary.decisions == {"skipped": 1}
    skipped = decisions(publisher.published)[-1]
    assert skipped.reason is DecisionReason.SEMANTIC
    assert skipped.memory_id == decisions(publisher.published)[0].memory_id


async def test_partitions_are_embedded_largest_first_once_each(
    processor: BatchProcessor, publisher: FakePublisher, embedder: FakeEmbedder
) -> None:
    """Each partition's model call starts while earlier partitions are decided
    (looked ahead): one call per partition, nothing twice, the largest partitions
    first (ties in partition order), so the part decided after the model's last
    call is the smallest."""
    sizes = {2: 4, 0: 2, 1: 2, 3: 1}
    batch = [
        rec(
            f"q{partition}-{i}",
            f"Fact {i} kept on partition {partition}",
            10 * partition + i,
            partition=partition,
            tenant_id=f"t{partition}",
        )
        for partition, size in sizes.items()
        for i in range(size)
    ]
    summary = await processor.process(batch)
    assert summary.decisions == {"accepted": 9}
    order = (2, 0, 1, 3)
    assert embedder.calls == [
        [f"fact {i} kept on partition {partition}" for i in range(sizes[partition])]
        for partition in order
    ]
    # Without a changelog the batch's decisions go out at its end, by input position.
    assert [e.event_id for e in decisions(publisher.published)] == [
        f"q{partition}-{i}" for partition in sorted(sizes) for i in range(sizes[partition])
    ]
