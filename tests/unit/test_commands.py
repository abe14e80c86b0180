"""Commands on the input topic: reviews and compaction clusters, applied by the
batch processor with a fake model and the in-memory store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from consumer.domain import merge
from consumer.domain.models import Scope
from consumer.domain.normalize import content_hash, memory_id_for, normalize_content
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.errors import StoreUnavailable
from consumer.kafka.records import InputRecord
from consumer.observability.metrics import ServiceMetrics
from consumer.ports import MemoryStore
from consumer.settings import TopicSettings
from schemas import CommandResult, MemoryDecisionEvent, MemoryReversed
from schemas.commands import MAX_CLUSTER_MEMBERS

from .conftest import EngineFactory
from .helpers import (
    FakeEmbedder,
    FakePublisher,
    base_vector,
    event_dict,
    make_processor,
    make_record,
    unit_vector,
)

TOPICS = TopicSettings()
TENANT, NAMESPACE = "tenant-a", "prefs"


def memory_id(text: str) -> str:
    return memory_id_for(TENANT, NAMESPACE, content_hash(normalize_content(text)))


def command(command_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "command_id": command_id,
        "tenant_id": TENANT,
        "namespace": NAMESPACE,
        "issued_at": datetime(2025, 1, 3, tzinfo=UTC).isoformat(),
        "command": body,
    }


class Harness:
    def __init__(
        self, engine: Any, store: MemoryStore, embedder: FakeEmbedder, publisher: FakePublisher
    ) -> None:
        self.metrics = ServiceMetrics()
        self.processor = make_processor(
            engine=engine,
            store=store,
            publisher=publisher,
            topics=TOPICS,
            model_id=embedder.model_id,
            max_event_bytes=64 * 1024,
            metrics=self.metrics,
        )
        self.publisher = publisher
        self.offset = 0

    async def send(self, *documents: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        records = []
        for document in documents:
            records.append(make_record(document, offset=self.offset))
            self.offset += 1
        before = len(self.publisher.published)
        await self.processor.process(records)
        return [(r.topic, json.loads(r.value)) for r in self.publisher.published[before:]]


@pytest.fixture
def harness(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    publisher: FakePublisher,
) -> Harness:
    embedder.set("User likes green tea", base_vector())
    embedder.set("User enjoys green tea", unit_vector(0.85, 1))  # merge band (0.80-0.90)
    embedder.set("User loves green tea", unit_vector(0.95, 2))  # skip band (>= 0.90)
    return Harness(make_engine(), store, embedder, publisher)


def review(decision: dict[str, Any], action: str) -> dict[str, Any]:
    return {
        "type": "review",
        "decision_id": decision["decision_id"],
        "event_id": decision["event_id"],
        "action": action,
    }


async def test_reversing_a_merge_separates_the_memories(
    harness: Harness, store: MemoryStore
) -> None:
    [(_, accepted)] = await harness.send(event_dict(event_id="e1", content="User likes green tea"))
    [(topic, merged)] = await harness.send(
        event_dict(event_id="e2", content="User enjoys green tea")
    )
    assert (topic, merged["decision"], merged["memory"]["seen_count"]) == (
        TOPICS.merged,
        "merged",
        2,
    )
    # The merged memory keeps the folded text.
    assert merged["memory"]["folded_texts"] == [
        {"event_id": "e2", "content": "User enjoys green tea"}
    ]

    outputs = await harness.send(command("c1", review(merged, "reverse")))
    assert [topic for topic, _ in outputs] == [TOPICS.reversed, TOPICS.command_results]
    reversal = MemoryReversed.model_validate(outputs[0][1])
    result = CommandResult.model_validate(outputs[1][1])
    assert result.status.value == "applied"
    assert result.review_status is not None
    assert result.review_status.value == "reversed"
    assert reversal.restored_memory.memory_id == memory_id("User enjoys green tea")
    assert reversal.target_memory is not None
    assert reversal.target_memory.memory_id == accepted["memory_id"]
    assert reversal.target_memory.seen_count == 1
    assert reversal.target_memory.merged_event_ids == []
    assert reversal.target_memory.folded_texts == []
    assert reversal.target_text_restored is True

    stored = await store.get_memories(
        0, [memory_id("User enjoys green tea"), accepted["memory_id"]]
    )
    assert stored[memory_id("User enjoys green tea")].content == "User enjoys green tea"
    assert stored[memory_id("User enjoys green tea")].vector is not None
    assert stored[accepted["memory_id"]].seen_count == 1
    assert stored[accepted["memory_id"]].folded_texts == []

    # A redelivered command re-emits the same records and changes nothing.
    again = await harness.send(command("c1", review(merged, "reverse")))
    assert again == outputs
    # A new review of the same decision is rejected: already reversed.
    [(_, second)] = await harness.send(command("c2", review(merged, "reverse")))
    assert (second["status"], second["detail"]) == ("rejected", "the decision was already reversed")

    # The event's text now has its own memory: an exact repeat is skipped into it.
    [(_, repeat)] = await harness.send(event_dict(event_id="e3", content="user enjoys green tea!"))
    assert (repeat["decision"], repeat["reason"]) == ("skipped", "exact")
    assert repeat["memory_id"] == memory_id("User enjoys green tea")


async def test_reversing_a_merge_whose_text_was_replaced_since_keeps_the_other_texts(
    make_engine: EngineFactory, store: MemoryStore, embedder: FakeEmbedder
) -> None:
    """replace_with_newer: A, then B merged (text B), then C merged (text C). Reversing
    B's merge leaves C as the text and takes B out of the folded texts; A stays."""
    from consumer.domain.thresholds import Bands, ThresholdPolicy

    a, b, c = "User likes green tea", "User enjoys green tea", "User drinks green tea"
    embedder.set(a, base_vector())
    b_vector = unit_vector(0.85, 1)
    embedder.set(b, b_vector)
    c_vector = 0.85 * b_vector
    c_vector[3] = (1 - 0.85**2) ** 0.5  # 0.85 with B (the memory's vector once B is its text)
    embedder.set(c, c_vector)
    bands = Bands(duplicate_threshold=0.90, merge_threshold=0.80, merge_policy="replace_with_newer")
    harness = Harness(
        make_engine(policy=ThresholdPolicy(default=bands), guards=False),
        store,
        embedder,
        FakePublisher(),
    )
    [(_, accepted)] = await harness.send(event_dict(event_id="e1", content=a))
    [(_, merged_b)] = await harness.send(event_dict(event_id="e2", content=b))
    [(_, merged_c)] = await harness.send(event_dict(event_id="e3", content=c))
    assert (merged_b["decision"], merged_c["decision"]) == ("merged", "merged")
    assert merged_c["memory"]["content"] == c
    assert merged_c["memory"]["folded_texts"] == [
        {"event_id": "e1", "content": a},
        {"event_id": "e2", "content": b},
    ]

    outputs = await harness.send(command("c1", review(merged_b, "reverse")))
    reversal = MemoryReversed.model_validate(outputs[0][1])
    assert reversal.target_text_restored is False
    assert reversal.target_memory is not None
    assert reversal.target_memory.content == c
    assert [(t.event_id, t.content) for t in reversal.target_memory.folded_texts] == [("e1", a)]
    assert reversal.restored_memory.content == b
    target = (await store.get_memories(0, [accepted["memory_id"]]))[accepted["memory_id"]]
    assert [(t.event_id, t.content) for t in target.folded_texts] == [("e1", a)]


async def test_reversing_a_semantic_skip_gives_back_the_count(harness: Harness) -> None:
    await harness.send(event_dict(event_id="e1", content="User likes green tea"))
    [(_, skipped)] = await harness.send(event_dict(event_id="e2", content="User loves green tea"))
    assert (skipped["decision"], skipped["reason"]) == ("skipped", "semantic")
    assert skipped["memory"]["seen_count"] == 2
    outputs = await harness.send(command("c1", review(skipped, "reverse")))
    reversal = MemoryReversed.model_validate(outputs[0][1])
    assert reversal.original_decision.value == "skipped"
    assert reversal.target_memory is not None
    assert reversal.target_memory.seen_count == 1
    assert reversal.restored_memory.content == "User loves green tea"


async def test_reviews_that_cannot_apply_are_rejected_with_a_reason(harness: Harness) -> None:
    [(_, accepted)] = await harness.send(event_dict(event_id="e1", content="User likes green tea"))
    [(_, exact)] = await harness.send(event_dict(event_id="e2", content="user likes green tea"))
    [(_, r1)] = await harness.send(command("c1", review(accepted, "reverse")))
    assert r1["status"] == "rejected"
    assert "nothing to reverse" in r1["detail"]
    [(_, r2)] = await harness.send(command("c2", review(exact, "reverse")))
    assert r2["status"] == "rejected"
    assert "this decision skipped the event as an exact repeat" in r2["detail"]
    assert "only semantic skips and merges can be reversed" in r2["detail"]
    unknown = {**review(accepted, "confirm"), "event_id": "nope"}
    [(_, r3)] = await harness.send(command("c3", unknown))
    assert r3["status"] == "rejected"
    assert r3["detail"].startswith("no decision")
    [(_, r4)] = await harness.send(command("c4", review(accepted, "confirm")))
    assert (r4["status"], r4["review_status"]) == ("applied", "confirmed")
    # A redelivered command is not counted twice.
    await harness.send(command("c4", review(accepted, "confirm")))
    registry = harness.metrics.registry
    for status, count in (("rejected", 3.0), ("applied", 1.0)):
        labels = {"type": "review", "status": status}
        assert registry.get_sample_value("memdedup_commands_total", labels) == count


async def test_a_reviewed_pair_is_never_matched_again(
    make_engine: EngineFactory, store: MemoryStore, embedder: FakeEmbedder
) -> None:
    embedder.set("User likes green tea", base_vector())
    embedder.set("User loves green tea", unit_vector(0.95, 2))
    engine = make_engine()
    harness = Harness(engine, store, embedder, FakePublisher())
    await harness.send(event_dict(event_id="e1", content="User likes green tea"))
    engine.reviewed.add(
        Scope(TENANT, NAMESPACE),
        content_hash(normalize_content("User loves green tea")),
        content_hash(normalize_content("User likes green tea")),
    )
    [(_, decided)] = await harness.send(event_dict(event_id="e2", content="User loves green tea"))
    assert decided["decision"] == "accepted"
    assert decided["guard"]["name"] == "reviewed_pair"


def compact(keeper: str, members: list[tuple[str, str]], run_id: str = "r1") -> dict[str, Any]:
    return {
        "type": "compact",
        "run_id": run_id,
        "keeper_id": memory_id(keeper),
        "keeper_hash": content_hash(normalize_content(keeper)),
        "members": [
            {
                "memory_id": memory_id(text),
                "content_hash": content_hash(normalize_content(text)),
                "similarity": 0.95,
                "decision": decision,
            }
            for text, decision in members
        ],
    }


async def test_compaction_folds_members_into_the_keeper_and_redirects_their_ids(
    make_engine: EngineFactory, store: MemoryStore, embedder: FakeEmbedder
) -> None:
    harness = Harness(make_engine(), store, embedder, FakePublisher())
    # Orthogonal vectors: all accepted as separate memories.
    texts = ["User likes green tea", "User enjoys green tea", "User loves green tea"]
    for index, text in enumerate(texts):
        await harness.send(event_dict(event_id=f"e{index}", content=text, topics=[f"t{index}"]))
    outputs = await harness.send(
        command("c1", compact(texts[0], [(texts[1], "merged"), (texts[2], "skipped")]))
    )
    topics = [topic for topic, _ in outputs]
    assert topics == [TOPICS.merged, TOPICS.skipped, TOPICS.command_results]
    merged = MemoryDecisionEvent.model_validate(outputs[0][1])
    assert merged.reason.value == "compaction"
    assert merged.superseded_memory_id == memory_id(texts[1])
    assert merged.memory_id == memory_id(texts[0])
    assert outputs[2][1]["removed_memory_ids"] == [memory_id(texts[1]), memory_id(texts[2])]
    keeper = outputs[1][1]["memory"]
    assert keeper["seen_count"] == 3
    assert keeper["topics"] == ["t0", "t1", "t2"]
    assert [s["event_id"] for s in keeper["merged_from"]] == ["e1", "e2"]
    # The keeper keeps the members' texts.
    assert keeper["folded_texts"] == [
        {"event_id": "e1", "content": texts[1]},
        {"event_id": "e2", "content": texts[2]},
    ]
    assert await store.count_memories(0) == 1
    # A member's id now leads to the keeper; an exact repeat is skipped into it.
    found = await store.get_memories(0, [memory_id(texts[2])])
    assert found[memory_id(texts[2])].memory_id == memory_id(texts[0])
    [(_, repeat)] = await harness.send(event_dict(event_id="e9", content="user loves green tea"))
    assert (repeat["decision"], repeat["memory_id"]) == ("skipped", memory_id(texts[0]))

    # A cluster planned before these changes no longer applies.
    [(_, stale)] = await harness.send(
        command("c2", compact(texts[1], [(texts[0], "merged")], run_id="r2"))
    )
    assert stale["status"] == "rejected"
    assert "changed or was removed" in stale["detail"]
    assert await store.count_memories(0) == 1


async def test_compaction_keeps_the_texts_folded_into_the_members(
    make_engine: EngineFactory, store: MemoryStore, embedder: FakeEmbedder
) -> None:
    keeper_text, member_text, merged_text = (
        "User owns a grey cat",
        "User likes green tea",
        "User enjoys green tea",
    )
    embedder.set(member_text, base_vector())
    embedder.set(merged_text, unit_vector(0.85, 1))  # merged into the member
    harness = Harness(make_engine(), store, embedder, FakePublisher())
    await harness.send(event_dict(event_id="k1", content=keeper_text))
    await harness.send(event_dict(event_id="m1", content=member_text))
    [(_, merged)] = await harness.send(event_dict(event_id="m2", content=merged_text))
    assert merged["decision"] == "merged"
    outputs = await harness.send(command("c1", compact(keeper_text, [(member_text, "merged")])))
    keeper = MemoryDecisionEvent.model_validate(outputs[0][1]).memory
    assert keeper.content == keeper_text
    assert [(t.event_id, t.content) for t in keeper.folded_texts] == [
        ("m2", merged_text),
        ("m1", member_text),
    ]
    stored = (await store.get_memories(0, [memory_id(keeper_text)]))[memory_id(keeper_text)]
    assert [t.content for t in stored.folded_texts] == [merged_text, member_text]


async def test_compaction_keeps_the_latest_lineage_only(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(merge, "LINEAGE_LIMIT", 1)
    harness = Harness(make_engine(), store, embedder, FakePublisher())
    texts = ["User likes green tea", "User enjoys green tea", "User loves green tea"]
    for index, text in enumerate(texts):
        await harness.send(event_dict(event_id=f"e{index}", content=text))
    outputs = await harness.send(
        command("c1", compact(texts[0], [(texts[1], "merged"), (texts[2], "merged")]))
    )
    keeper = outputs[1][1]["memory"]
    assert keeper["seen_count"] == 3
    assert keeper["merged_event_ids"] == ["e2"]
    assert [s["event_id"] for s in keeper["merged_from"]] == ["e2"]


def cut_short_after_the_keeper(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first store write that redirects members lands only its first point (the
    folded keeper) and then fails, as an append cut short does; returns a list
    that gets the size of that write."""
    apply_points = type(store).apply_points
    cut_short: list[int] = []

    async def keeper_only(self: Any, partition: int, points: Any, **kwargs: Any) -> Any:
        if not cut_short and any(p.payload.get("kind") == "redirect" for p in points):
            cut_short.append(len(points))
            await apply_points(self, partition, points[:1], **kwargs)  # the keeper
            raise StoreUnavailable("injected: cut short after the keeper")
        return await apply_points(self, partition, points, **kwargs)

    monkeypatch.setattr(type(store), "apply_points", keeper_only)
    return cut_short


@pytest.mark.parametrize("policy", ["keep_existing", "replace_with_newer"])
async def test_a_compaction_cut_short_after_its_keeper_completes_when_redelivered(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    policy: str,
) -> None:
    """A write that lands the folded keeper and then fails (a crash part-way through
    the changelog append): the redelivered command finishes the cluster with the
    keeper as stored. It is not folded again (the members' sightings would count
    twice), and a keeper whose text the fold replaced is no reason to reject it."""
    bands = Bands(duplicate_threshold=0.999, merge_threshold=0.999, merge_policy=policy)  # type: ignore[arg-type]
    engine = make_engine(policy=ThresholdPolicy(default=bands))
    harness = Harness(engine, store, embedder, FakePublisher())
    texts = ["User likes green tea", "User enjoys green tea", "User loves green tea"]
    for index, text in enumerate(texts):
        await harness.send(event_dict(event_id=f"e{index}", content=text))
    cut_short = cut_short_after_the_keeper(store, monkeypatch)
    body = compact(texts[0], [(texts[1], "merged"), (texts[2], "skipped")])
    body["text_source_id"] = memory_id(texts[2]) if policy == "replace_with_newer" else None
    with pytest.raises(StoreUnavailable):
        await harness.send(command("c1", body))
    assert cut_short == [4]  # keeper, two redirects, the command record
    harness.offset -= 1  # the same record, redelivered
    outputs = await harness.send(command("c1", body))
    assert [topic for topic, _ in outputs] == [
        TOPICS.merged,
        TOPICS.skipped,
        TOPICS.command_results,
    ]
    assert outputs[-1][1]["status"] == "applied"
    keeper = MemoryDecisionEvent.model_validate(outputs[0][1]).memory
    assert keeper.seen_count == 3
    assert [s.event_id for s in keeper.merged_from] == ["e1", "e2"]
    kept_text = texts[2] if policy == "replace_with_newer" else texts[0]
    assert keeper.content == kept_text
    assert sorted(t.content for t in keeper.folded_texts) == sorted(
        t for t in texts if t != kept_text
    )
    assert [d["event_id"] for _, d in outputs[:2]] == ["e1", "e2"]
    assert await store.count_memories(0) == 1
    for text in texts[1:]:
        found = await store.get_memories(0, [memory_id(text)])
        assert found[memory_id(text)].memory_id == memory_id(texts[0])
    stored = (await store.get_memories(0, [memory_id(texts[0])]))[memory_id(texts[0])]
    assert stored.seen_count == 3


async def test_a_cut_short_compaction_is_recognised_when_the_lineage_overflows(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The keeper's lineage is bounded; a member that brings a lineage of its own
    must not push another member's own entry out, or the redelivered command no
    longer sees that the stored keeper holds the cluster and folds it again (the
    members' sightings counted twice; a keeper whose text the fold replaced is
    rejected as changed instead)."""
    monkeypatch.setattr(merge, "LINEAGE_LIMIT", 2)
    keeper_text, member_text, merged_text, other_text = (
        "User owns a grey cat",
        "User likes green tea",
        "User enjoys green tea",
        "User lives in Lyon",
    )
    embedder.set(member_text, base_vector())
    embedder.set(merged_text, unit_vector(0.85, 1))  # merged into the first member
    harness = Harness(make_engine(), store, embedder, FakePublisher())
    await harness.send(event_dict(event_id="k1", content=keeper_text))
    await harness.send(event_dict(event_id="m1", content=member_text))
    [(_, merged)] = await harness.send(event_dict(event_id="m2", content=merged_text))
    assert merged["decision"] == "merged"
    await harness.send(event_dict(event_id="o1", content=other_text))
    cut_short_after_the_keeper(store, monkeypatch)
    body = compact(keeper_text, [(member_text, "merged"), (other_text, "merged")])
    with pytest.raises(StoreUnavailable):
        await harness.send(command("c1", body))
    harness.offset -= 1  # the same record, redelivered
    outputs = await harness.send(command("c1", body))
    assert outputs[-1][1]["status"] == "applied", outputs[-1][1]
    keeper = MemoryDecisionEvent.model_validate(outputs[0][1]).memory
    assert [s.event_id for s in keeper.merged_from] == ["m1", "o1"]
    assert keeper.seen_count == 4  # k1, m1 with m2, o1: counted once
    assert await store.count_memories(0) == 1


def test_a_cluster_fits_the_lineage() -> None:
    """Every member's own lineage entry survives a fold (see above) only while a
    cluster has no more members than the lineage keeps entries."""
    assert MAX_CLUSTER_MEMBERS <= merge.LINEAGE_LIMIT


async def test_a_malformed_command_is_dead_lettered_with_its_id(harness: Harness) -> None:
    bad = command("c-bad", {"type": "review", "decision_id": "d"})
    [(topic, _)] = await harness.send(bad)
    assert topic == TOPICS.dlq
    dead = harness.publisher.published[-1]
    assert dead.headers["error_code"] == "schema_violation"
    assert dead.headers["event_id"] == "c-bad"


async def test_commands_wait_for_the_store_when_failing_open(harness: Harness) -> None:
    record = make_record(
        command("c1", {"type": "review", "decision_id": "d", "event_id": "e", "action": "confirm"}),
        offset=7,
    )
    summary = await harness.processor.process_fail_open([record])
    [deferred] = harness.publisher.published
    assert (deferred.topic, deferred.partition, deferred.value) == (
        TOPICS.input,
        0,
        record.value,
    )
    assert summary.rerouted == 1


async def test_periodic_compaction_folds_a_large_scope_once_per_interval(
    make_engine: EngineFactory, store: MemoryStore, embedder: FakeEmbedder
) -> None:
    from consumer.domain.thresholds import Bands, ThresholdPolicy
    from consumer.settings import CompactionSettings

    embedder.set("User likes green tea", base_vector())
    embedder.set("User loves green tea", unit_vector(0.95, 2))
    embedder.set("User adores green tea", unit_vector(0.97, 3))
    # Ingested with bands nothing reaches: three separate memories.
    strict = ThresholdPolicy(default=Bands(duplicate_threshold=0.999, merge_threshold=0.999))
    ingest = Harness(make_engine(policy=strict), store, embedder, FakePublisher())
    for index, text in enumerate(
        ["User likes green tea", "User loves green tea", "User adores green tea"]
    ):
        await ingest.send(event_dict(event_id=f"e{index}", content=text))
    await ingest.send(event_dict(event_id="o1", content="Small scope", namespace="other"))
    assert await store.count_memories(0) == 4

    publisher = FakePublisher()
    processor = make_processor(
        engine=make_engine(),
        store=store,
        publisher=publisher,
        topics=TOPICS,
        model_id=embedder.model_id,
        max_event_bytes=64 * 1024,
        compaction=CompactionSettings(periodic=True, min_memories=2, interval_s=3600),
    )
    await processor.process(
        [make_record(event_dict(event_id="n1", content="User owns a cat"), offset=10)]
    )
    await processor.process(
        [make_record(event_dict(event_id="o2", content="Other fact", namespace="other"), offset=11)]
    )
    # The trigger planned the scope and published its clusters to the scope's own
    # input partition; nothing is folded until they come back as input.
    commands = [r for r in publisher.published if r.topic == TOPICS.input]
    assert len(commands) == 1
    assert commands[0].key == f"{TENANT}/{NAMESPACE}".encode()
    assert commands[0].partition == 0
    assert await store.count_memories(0, TENANT, NAMESPACE) == 4
    await processor.process(
        [
            InputRecord(TOPICS.input, 0, 12 + i, r.key, r.value, 1_700_000_000_000)
            for i, r in enumerate(commands)
        ]
    )
    decisions = [
        json.loads(r.value)
        for r in publisher.published
        if r.topic in (TOPICS.accepted, TOPICS.merged, TOPICS.skipped)
    ]
    compacted = [d for d in decisions if d["reason"] == "compaction"]
    assert len(compacted) == 2
    assert {d["record"]["offset"] for d in compacted} == {12}
    # 4 in prefs (3 tea + cat) -> 2; "other" has 2 memories: not more than min_memories.
    assert await store.count_memories(0, TENANT, NAMESPACE) == 2
    assert await store.count_memories(0, TENANT, "other") == 2

    # Within the interval the scope is not compacted again, even by a new process.
    embedder.set("User likes green tea a lot", unit_vector(0.999, 4))
    strict_again = Harness(make_engine(policy=strict), store, embedder, FakePublisher())
    await strict_again.send(event_dict(event_id="e9", content="User likes green tea a lot"))
    later = FakePublisher()
    fresh = make_processor(
        engine=make_engine(),
        store=store,
        publisher=later,
        topics=TOPICS,
        model_id=embedder.model_id,
        max_event_bytes=64 * 1024,
        compaction=CompactionSettings(periodic=True, min_memories=2, interval_s=3600),
    )
    await fresh.process(
        [make_record(event_dict(event_id="n2", content="User owns a dog"), offset=20)]
    )
    assert [r.topic for r in later.published] == [TOPICS.accepted]


@pytest.mark.parametrize(
    ("policy", "text_source", "expected_text", "fallback"),
    [
        ("keep_existing", None, "User likes green tea", None),
        ("replace_with_newer", "User loves green tea", "User loves green tea", None),
        ("synthesize", None, "User really likes green tea", None),
        ("synthesize-failing", None, "User loves green tea", "replace_with_newer"),
    ],
)
async def test_compaction_applies_the_namespace_merge_policy(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    policy: str,
    text_source: str | None,
    expected_text: str,
    fallback: str | None,
) -> None:
    from consumer.domain.merge import MergeFailed, MergeText

    class StubMerger:
        def __init__(self, fail: bool) -> None:
            self.fail = fail
            self.calls: list[tuple[str, str]] = []

        async def merge(self, older: MergeText, newer: MergeText) -> str:
            self.calls.append((older.content, newer.content))
            if self.fail:
                raise MergeFailed("down")
            return "User really likes green tea"

    merger = StubMerger(fail=policy == "synthesize-failing")
    name = "synthesize" if policy.startswith("synthesize") else policy
    bands = Bands(duplicate_threshold=0.90, merge_threshold=0.80, merge_policy=name)  # type: ignore[arg-type]
    engine = make_engine(policy=ThresholdPolicy(default=bands), merger=merger)
    ingest = Harness(
        make_engine(policy=ThresholdPolicy(default=Bands(0.999, 0.999))),
        store,
        embedder,
        FakePublisher(),
    )
    await ingest.send(event_dict(event_id="e1", content="User likes green tea", importance=0.3))
    await ingest.send(event_dict(event_id="e2", content="User loves green tea", importance=0.9))
    harness = Harness(engine, store, embedder, FakePublisher())
    body = compact("User likes green tea", [("User loves green tea", "merged")])
    body["text_source_id"] = memory_id(text_source) if text_source else None
    outputs = await harness.send(command("c1", body))
    decision = MemoryDecisionEvent.model_validate(outputs[0][1])
    assert decision.memory.content == expected_text
    assert decision.memory.importance == 0.9
    assert decision.merge_policy == name
    assert decision.merge_fallback == fallback
    if expected_text != "User likes green tea":
        assert decision.memory.supersedes == [
            content_hash(normalize_content("User likes green tea"))
        ]
    # Every text but the kept one is among the folded texts.
    folded = {t.content: t.event_id for t in decision.memory.folded_texts}
    expected_folded = {"User likes green tea": "e1", "User loves green tea": "e2"}
    expected_folded.pop(expected_text, None)
    assert folded == expected_folded
    stored = (await store.get_memories(0, [memory_id("User likes green tea")]))[
        memory_id("User likes green tea")
    ]
    assert stored.content == expected_text
    assert stored.vector is not None
    if name == "synthesize":
        assert merger.calls == [("User likes green tea", "User loves green tea")]
