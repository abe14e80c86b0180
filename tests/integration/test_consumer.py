"""The service end to end: local broker, real model, both store adapters."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from consumer.cli.compact import state_from_changelog
from consumer.errors import ChangelogUnavailable, StoreUnavailable
from consumer.kafka.topic_reader import read_all
from consumer.settings import Settings
from consumer.state import codec
from consumer.state.changelog import Changelog
from consumer.state.edge import EdgeMemoryStore
from schemas import DeadLetterHeaders, MemoryDecisionEvent
from tests.integration.harness import (
    TIERS_BASE,
    TIERS_FOLLOW_UP,
    StoreFactory,
    committed_offsets,
    decisions_by_event,
    encode,
    event,
    make_settings,
    only,
    produce,
    read_outputs,
    restored_from_changelog,
    running_consumer,
    wait_committed,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STORE_KINDS = ["edge", "local"]


def edge_store_args(settings: Settings) -> dict[str, Any]:
    """What the embedded store of `settings`' data directory is built with."""
    return {
        "root": settings.qdrant.path,
        "collection": settings.qdrant.collection,
        "topic": settings.topics.input,
    }


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_decisions_for_each_tier_and_scope(
    local_broker: Any, real_embedder: Any, tmp_path: Path, store_kind: str
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory(store_kind, settings)
    base = TIERS_BASE
    follow_up = TIERS_FOLLOW_UP
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(settings, base)
            await read_outputs(settings, at_least=len(base))
            await produce(settings, follow_up)
            outputs = await read_outputs(
                settings, at_least=len(base) + len(follow_up), settle_s=1.0
            )
        decisions = decisions_by_event(outputs, settings)
        for body in (copy for copies in decisions.values() for copy in copies):
            MemoryDecisionEvent.model_validate(body)

        e1 = only(decisions, "e1")
        assert (e1["decision"], e1["reason"]) == ("accepted", "new")
        assert e1["memory_urn"] == f"mem://acme/prefs/{e1['memory_id']}"

        exact = only(decisions, "e4")
        assert (exact["decision"], exact["reason"]) == ("skipped", "exact")
        assert exact["memory_id"] == e1["memory_id"]
        assert exact["similarity"] is None
        assert exact["threshold"] is None
        assert [c["name"] for c in exact["checks"]] == ["exact"]

        paraphrase = only(decisions, "e5")
        assert paraphrase["reason"] == "semantic"
        assert paraphrase["decision"] in {"skipped", "merged"}
        assert paraphrase["memory_id"] == e1["memory_id"]
        assert paraphrase["similarity"] >= paraphrase["threshold"]

        merged = only(decisions, "e6")
        assert (merged["decision"], merged["reason"]) == ("merged", "semantic")
        assert merged["memory_id"] == only(decisions, "e3")["memory_id"]
        assert merged["memory"]["content"] == "User is allergic to peanuts"
        assert merged["memory"]["importance"] == 0.9
        assert merged["memory"]["topics"] == ["health"]
        assert merged["memory"]["merged_event_ids"] == ["e6"]
        # The memory keeps its text and the folded event's text.
        assert merged["memory"]["folded_texts"] == [
            {"event_id": "e6", "content": "The user has a peanut allergy"}
        ]

        for distinct in ("e7", "e8", "e9"):
            body = only(decisions, distinct)
            assert (body["decision"], body["reason"]) == ("accepted", "new"), distinct
        assert only(decisions, "e8")["memory_id"] != e1["memory_id"]
        assert only(decisions, "e9")["memory_id"] != e1["memory_id"]
        assert await stores.count() == 6  # e1, e2, e3, e7, e8, e9
    finally:
        await stores.close()


async def test_in_batch_repeats_are_exact_as_across_batches(
    local_broker: Any, real_embedder: Any, tmp_path: Path, store_kind: str
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory(store_kind, settings)
    # Published before the consumer starts, so one fetch returns them together.
    items = [
        event("r1", "User's daughter is named Emma"),
        event("r2", "user's daughter is named EMMA!"),
        event("r3", "User's   daughter is named Emma"),
    ]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            outputs = await read_outputs(settings, at_least=3, settle_s=0.5)
        decisions = decisions_by_event(outputs, settings)
        first = only(decisions, "r1")
        assert first["decision"] == "accepted"
        for repeat in ("r2", "r3"):
            body = only(decisions, repeat)
            # The reason a repeat in a later batch gets: batch boundaries change none.
            assert (body["decision"], body["reason"]) == ("skipped", "exact")
            assert body["memory_id"] == first["memory_id"]
            assert [(c["name"], c["hit"]) for c in body["checks"]] == [("exact", True)]
        assert await stores.count() == 1
    finally:
        await stores.close()


async def test_every_dead_letter_code_keeps_the_original_bytes(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    secret = "Sekret memory text 4711"

    def raw_event(**fields: Any) -> bytes:
        return json.dumps({**event("d0", secret), **fields}).encode()

    bad: dict[str, bytes] = {
        "invalid_json": raw_event()[:-1],
        "schema_violation": raw_event(event_id="d2", contnet="typo"),
        "unsupported_schema_version": raw_event(event_id="d3", schema_version=2),
        "too_large": raw_event(event_id="d4", content=(secret + " ") * 800),
        "empty_content": raw_event(event_id="d5", content=" ... "),
    }
    good = event("d6", secret)
    conflicting = event("d6", secret + " but different")
    items: list[Any] = [*bad.values(), good, conflicting]
    positions = await produce(settings, items)
    stores = StoreFactory("edge", settings)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            outputs = await read_outputs(settings, at_least=len(items), settle_s=0.5)
    finally:
        await stores.close()
    dead = [o for o in outputs if o.topic == settings.topics.dlq]
    by_code = {o.headers["error_code"].decode(): o for o in dead}
    assert len(dead) == len(by_code) == len(bad) + 1
    assert set(by_code) == {*bad, "conflicting_event_id"}
    for code, raw in bad.items():
        assert by_code[code].value == raw, code
    assert by_code["conflicting_event_id"].value == encode(conflicting)
    for code, output in by_code.items():
        headers = DeadLetterHeaders.from_kafka(list(output.headers.items()))
        assert headers.error_code.value == code
        assert headers.source_topic == settings.topics.input
        assert (headers.source_partition, headers.source_offset) in positions
        assert headers.error_detail
        assert secret.lower() not in headers.error_detail.lower()
    accepted = [o for o in outputs if o.topic == settings.topics.accepted]
    assert [o.body["event_id"] for o in accepted] == ["d6"]


async def test_redelivered_events_reemit_identical_decisions_and_store_nothing(
    local_broker: Any, real_embedder: Any, tmp_path: Path, store_kind: str
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory(store_kind, settings)
    items = [
        event("p1", "User prefers Python for backend work"),
        event("p2", "User prefers Python for backend development work"),
        event("p3", "Python is the user's preferred language for backend work", topics=["lang"]),
        event("p4", "User lives in Paris"),
        event("p4b", "user lives in paris"),
    ]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            first = await read_outputs(settings, at_least=len(items), settle_s=0.5)
        memories = await stores.count()
        # A second group reads the topic from the start: every event is delivered again.
        again = settings.model_copy(
            update={
                "kafka": settings.kafka.model_copy(
                    update={"group_id": settings.kafka.group_id + "-again"}
                )
            }
        )
        async with running_consumer(again, real_embedder, await stores.open()):
            both = await read_outputs(settings, at_least=2 * len(items), settle_s=1.0)
        assert await stores.count() == memories
    finally:
        await stores.close()
    first_values = sorted(o.value for o in first)
    values = sorted(o.value for o in both)
    assert len(first_values) == len(items)
    # Each decision appears exactly twice, byte for byte.
    assert values == sorted(first_values * 2)


async def test_offsets_are_not_committed_while_the_store_is_down(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    stores = StoreFactory("edge", settings)
    # Another owner holds the partition's shard: the consumer cannot open it.
    holder = EdgeMemoryStore(**edge_store_args(settings))
    await holder.start(real_embedder.dimension)
    await holder.count_memories(partition=0)
    facts = [
        "User grows tomatoes in the garden",
        "User's car is a red hatchback",
        "User is learning Japanese",
        "User's birthday is in March",
        "User works night shifts at a hospital",
    ]
    items = [event(f"s{i}", fact) for i, fact in enumerate(facts)]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await asyncio.sleep(4.0)  # two retry windows of max_elapsed_s
            assert await read_outputs(settings, at_least=1, timeout_s=1.0) == []
            assert await committed_offsets(settings) == {0: None}

            await holder.close()  # the store comes back

            async def all_committed() -> bool:
                return await committed_offsets(settings) == {0: len(items)}

            assert await wait_until(all_committed, timeout_s=30)
            outputs = await read_outputs(settings, at_least=len(items), settle_s=0.5)
        assert sorted(o.body["event_id"] for o in outputs) == sorted(i["event_id"] for i in items)
        assert all(o.topic == settings.topics.accepted for o in outputs)
    finally:
        await stores.close()


class ShardWriteFailsOnce(EdgeMemoryStore):
    """The first write of decided events fails after the changelog took them (the
    decisions are on their way out meanwhile); the shard stays without them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failed = 0

    async def apply_points(self, partition: int, points: Any, **kwargs: Any) -> None:
        if not self.failed and any(p.payload.get("kind") == "decision" for p in points):
            self.failed += 1
            raise StoreUnavailable("injected: shard write failed")
        await super().apply_points(partition, points, **kwargs)


async def test_a_failed_shard_write_is_restored_from_the_changelog_before_the_retry(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    """Decisions are published while the shard is written; when that write fails,
    the retry restores the shard from the changelog and answers with the very same
    decisions (byte for byte) instead of deciding again. What the broker already
    acknowledged is not published a second time."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    store = ShardWriteFailsOnce(**edge_store_args(settings))
    items = [
        event("w1", "User keeps bees on the roof"),
        event("w2", "user keeps bees on the roof."),
        event("w3", "User's sister lives in Lisbon"),
        event("w4", "User prefers aisle seats on long flights"),
    ]
    await produce(settings, items)
    async with running_consumer(settings, real_embedder, store):
        assert await wait_committed(settings, len(items), timeout_s=30)
        outputs = await read_outputs(settings, at_least=len(items), settle_s=1.0)
    assert store.failed == 1
    by_event: dict[str, set[bytes]] = {}
    for output in outputs:
        by_event.setdefault(output.body["event_id"], set()).add(output.value)
    assert sorted(by_event) == ["w1", "w2", "w3", "w4"]
    # Published before the failure; the retry found them acknowledged and sent no copy.
    assert all(len(values) == 1 for values in by_event.values()), by_event
    assert len(outputs) == len(items)
    decided = {event_id: json.loads(next(iter(v))) for event_id, v in by_event.items()}
    assert decided["w2"]["decision"] == "skipped"
    assert decided["w2"]["memory_id"] == decided["w1"]["memory_id"]
    reopened = EdgeMemoryStore(**edge_store_args(settings))
    await reopened.start(real_embedder.dimension)
    try:
        assert await reopened.count_memories(partition=0) == 3
        stored = await reopened.get_decisions(0, ["w1", "w2", "w3", "w4"])
        assert {e: r.event_json.encode() for e, r in stored.items()} == {
            e: next(iter(v)) for e, v in by_event.items()
        }
    finally:
        await reopened.close()


class AppendCutShort:
    """`Changelog.append` patched: the first append with decisions, once `armed`,
    lands only its memory points and then fails, as a crash part-way would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, armed: bool = True) -> None:
        self.armed = armed
        self.cut_short = 0
        append = Changelog.append

        async def append_cut_short(
            changelog: Changelog, partition: int, points: Any, *, deleted_ids: Any = ()
        ) -> int | None:
            decisions = any(p.payload.get("kind") == "decision" for p in points)
            if self.armed and not self.cut_short and decisions:
                self.cut_short += 1
                landed = [p for p in points if p.payload.get("kind") != "decision"]
                await append(changelog, partition, landed, deleted_ids=deleted_ids)
                raise ChangelogUnavailable("injected: append cut short after the memories")
            return await append(changelog, partition, points, deleted_ids=deleted_ids)

        monkeypatch.setattr(Changelog, "append", append_cut_short)


async def test_an_append_cut_short_after_the_memories_accepts_their_events_again(
    local_broker: Any, real_embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changelog append lands its points in order, memories before decisions, so
    a crash part-way can land accepted memories without their decisions. The retry
    restores those memories and must still announce them as accepted (nothing was
    published before), not as exact skips into memories no decision ever named."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    cut = AppendCutShort(monkeypatch)
    store = EdgeMemoryStore(**edge_store_args(settings))
    items = [
        event("c1", "User keeps bees on the roof"),
        event("c2", "user keeps bees on the roof."),
        event("c3", "User's sister lives in Lisbon"),
    ]
    await produce(settings, items)
    async with running_consumer(settings, real_embedder, store):
        assert await wait_committed(settings, len(items), timeout_s=30)
        outputs = await read_outputs(settings, at_least=len(items), settle_s=1.0)
    assert cut.cut_short == 1
    by_event = decisions_by_event(outputs, settings)
    decided = {event_id: only(by_event, event_id) for event_id in by_event}
    assert {e: d["decision"] for e, d in decided.items()} == {
        "c1": "accepted",
        "c2": "skipped",
        "c3": "accepted",
    }
    assert decided["c2"]["memory_id"] == decided["c1"]["memory_id"]
    reopened = EdgeMemoryStore(**edge_store_args(settings))
    await reopened.start(real_embedder.dimension)
    try:
        # Every stored memory was announced by an accepted decision.
        assert await reopened.count_memories(partition=0) == 2
    finally:
        await reopened.close()


async def decided_after_a_cut_short_append(
    settings: Settings,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
    first: list[Any],
    then: list[Any],
) -> dict[str, list[dict[str, Any]]]:
    """Decisions by event when `first` is decided as usual and the append of the
    first batch of `then` lands only its memory points (`AppendCutShort`)."""
    cut = AppendCutShort(monkeypatch, armed=False)
    store = EdgeMemoryStore(**edge_store_args(settings))
    async with running_consumer(settings, embedder, store):
        await produce(settings, first)
        assert await wait_committed(settings, len(first), timeout_s=30)
        cut.armed = True
        await produce(settings, then)
        total = len(first) + len(then)
        assert await wait_committed(settings, total, timeout_s=30)
        outputs = await read_outputs(settings, at_least=total, settle_s=1.0)
    assert cut.cut_short == 1
    return decisions_by_event(outputs, settings)


async def stored_seen_count(settings: Settings, embedder: Any, memory_id: str) -> int:
    reopened = EdgeMemoryStore(**edge_store_args(settings))
    await reopened.start(embedder.dimension)
    try:
        return (await reopened.get_memories(0, [memory_id]))[memory_id].seen_count
    finally:
        await reopened.close()


async def test_a_merge_stored_without_its_decision_is_not_counted_twice(
    local_broker: Any, real_embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, for a merge: the memory with the event folded in lands, its
    decision does not. The retry merges the event again into a memory that holds
    it already: one merged decision, and the memory seen twice, not three times."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    by_event = await decided_after_a_cut_short_append(
        settings,
        real_embedder,
        monkeypatch,
        [event("m1", "User is allergic to peanuts")],
        [event("m2", "The user has a peanut allergy")],
    )
    first, merged = only(by_event, "m1"), only(by_event, "m2")
    assert merged["decision"] == "merged"
    assert merged["memory_id"] == first["memory_id"]
    assert merged["memory"]["merged_event_ids"] == ["m2"]
    assert merged["memory"]["seen_count"] == 2
    assert await stored_seen_count(settings, real_embedder, first["memory_id"]) == 2


async def test_a_skip_stored_without_its_decision_is_not_counted_twice(
    local_broker: Any, real_embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, for skips: the memory's seen update lands, the decisions do not.
    The retry skips the same events into a memory that counted them already: one
    decision each, and the memory seen three times, not five."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    by_event = await decided_after_a_cut_short_append(
        settings,
        real_embedder,
        monkeypatch,
        [event("k1", "User is allergic to peanuts")],
        [event("k2", "user is allergic to peanuts."), event("k3", "User is allergic to peanuts!")],
    )
    first = only(by_event, "k1")
    skipped = [only(by_event, e) for e in ("k2", "k3")]
    assert [(d["decision"], d["memory_id"]) for d in skipped] == [
        ("skipped", first["memory_id"])
    ] * 2
    assert skipped[-1]["memory"]["seen_count"] == 3
    assert await stored_seen_count(settings, real_embedder, first["memory_id"]) == 3


async def test_restart_resumes_from_committed_offsets(
    local_broker: Any, real_embedder: Any, tmp_path: Path, store_kind: str
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory(store_kind, settings)
    first = [
        event(f"a{i}", f"User owns {name}")
        for i, name in enumerate(["a cat", "a bicycle", "a piano"])
    ]
    second = [
        event(f"b{i}", f"User visited {city} last year") for i, city in enumerate(["Rome", "Oslo"])
    ]
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(settings, first)
            await read_outputs(settings, at_least=len(first))

            assert await wait_committed(settings, len(first), timeout_s=15)
        await produce(settings, second)  # while no consumer runs
        async with running_consumer(settings, real_embedder, await stores.open()):
            outputs = await read_outputs(settings, at_least=len(first) + len(second), settle_s=2.0)
        decisions = decisions_by_event(outputs, settings)
        assert sorted(decisions) == sorted(e["event_id"] for e in first + second)
        assert all(len(copies) == 1 for copies in decisions.values()), decisions
        offsets = await committed_offsets(settings)
        assert sum(o or 0 for o in offsets.values()) == len(first) + len(second)
    finally:
        await stores.close()


async def test_guards_veto_high_similarity_pairs_that_are_different_facts(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory("edge", settings)
    base = [
        event("g1", "User's flight leaves at 9am"),
        event("g2", "Alice loves Bob", namespace="people"),
        event("g3", "The meeting is on Monday", namespace="schedule"),
        event("g4", "User lives in Paris", namespace="bio"),
        event("g9", "The startup raised $5 million in its seed round", namespace="money"),
        event("g11", "The API allows 100 requests per minute", namespace="limits"),
    ]
    follow_up = [
        event("g5", "User's flight leaves at 9pm"),
        event("g6", "Bob loves Alice", namespace="people"),
        event("g7", "The meeting is not on Monday", namespace="schedule"),
        event("g8", "The user lives in Paris", namespace="bio"),
        # A magnitude after digits, a rate of one unit: both passed the guard before.
        event("g10", "The startup raised $5 billion in its seed round", namespace="money"),
        event("g12", "The API allows 100 requests per second", namespace="limits"),
    ]
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(settings, base)
            await read_outputs(settings, at_least=len(base))
            await produce(settings, follow_up)
            outputs = await read_outputs(
                settings, at_least=len(base) + len(follow_up), settle_s=0.5
            )
    finally:
        await stores.close()
    decisions = decisions_by_event(outputs, settings)
    vetoed = (
        ("g5", "numbers"),
        ("g6", "word_order"),
        ("g7", "negation"),
        ("g10", "numbers"),
        ("g12", "numbers"),
    )
    for event_id, guard in vetoed:
        body = only(decisions, event_id)
        assert (body["decision"], body["reason"]) == ("accepted", "new"), event_id
        assert body["guard"]["name"] == guard, body["guard"]
        assert body["guard"]["similarity"] >= settings.dedup.merge_threshold
    paraphrase = only(decisions, "g8")
    assert paraphrase["decision"] in {"skipped", "merged"}
    assert paraphrase["guard"] is None


class SwitchableEmbedder:
    """The real model, which can be made to fail as a crashed worker would."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.down = False
        self.model_id = inner.model_id
        self.dimension = inner.dimension

    async def embed(self, texts: Any) -> Any:
        if self.down:
            from consumer.errors import EmbedderUnavailable

            raise EmbedderUnavailable("model worker crashed")
        return await self._inner.embed(texts)

    async def close(self) -> None:
        """The shared model outlives the test."""


async def test_degraded_modes_decide_without_the_model_or_the_store(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    from consumer.chaos.store import OutageSwitchStore

    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={"on_model_unavailable": "exact_recent_only", "on_store_unavailable": "accept"},
    )
    stores = StoreFactory("edge", settings)
    embedder = SwitchableEmbedder(real_embedder)
    outage = tmp_path / "outage"
    store = OutageSwitchStore(await stores.open(), outage_file=outage)
    try:
        async with running_consumer(settings, embedder, store):
            embedder.down = True
            await produce(settings, [event("d1", "User keeps a diary in Esperanto")])
            first = await read_outputs(settings, at_least=1)
            embedder.down = False
            await produce(settings, [event("d2", "The user keeps a diary in Esperanto")])
            await read_outputs(settings, at_least=2)
            outage.touch()
            await produce(settings, [event("d3", "User repairs old radios")])
            outputs = await read_outputs(settings, at_least=3, settle_s=0.5)
            outage.unlink()
        memories = await stores.count()
    finally:
        await stores.close()
    decisions = decisions_by_event(outputs, settings)
    d1 = only(decisions, "d1")
    assert (d1["decision"], d1["degraded"], d1["skipped_checks"]) == (
        "accepted",
        True,
        ["semantic"],
    )
    d2 = only(decisions, "d2")  # the model is back: the degraded memory was embedded
    assert d2["decision"] in {"skipped", "merged"}
    assert d2["memory_id"] == d1["memory_id"]
    assert d2["degraded"] is False
    d3 = only(decisions, "d3")  # store down: failed open, nothing stored
    assert (d3["decision"], d3["degraded"]) == ("accepted", True)
    assert set(d3["skipped_checks"]) == {"exact", "semantic"}
    assert memories == 1
    assert first


async def test_misrouted_records_are_rerouted_and_decided_on_their_scope_partition(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    import json as _json
    import zlib

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    from consumer.kafka.partitioning import canonical_partition
    from consumer.kafka.topics import ensure_topics
    from schemas import scope_key

    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 6})
    stores = StoreFactory("edge", settings)
    await ensure_topics(settings)
    key = scope_key("acme", "prefs").encode()
    home = canonical_partition(key, 6)
    crc32_partition = (zlib.crc32(key) & 0x7FFFFFFF) % 6  # librdkafka's default
    wrong = next(p for p in range(6) if p != home)
    records = [
        # A librdkafka-style producer: right key, partition by CRC32.
        (event("x1", "User brews kombucha at home"), key, crc32_partition),
        # A producer that forgot the key.
        (event("x2", "User plays chess on Sundays"), None, wrong),
        # Wrong key for the body.
        (event("x3", "User knits scarves"), b"acme/other", wrong),
        # Correct.
        (event("x4", "User is training for a triathlon"), key, home),
    ]
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await producer.start()
    try:
        for body, record_key, partition in records:
            await producer.send_and_wait(
                settings.topics.input,
                _json.dumps(body).encode(),
                key=record_key,
                partition=partition,
            )
    finally:
        await producer.stop()
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            outputs = await read_outputs(settings, at_least=len(records), settle_s=1.0)
    finally:
        await stores.close()
    decisions = decisions_by_event(outputs, settings)
    assert sorted(decisions) == ["x1", "x2", "x3", "x4"]
    for event_id in decisions:
        body = only(decisions, event_id)
        # Decided on the scope's own partition, never where it landed.
        assert body["record"]["partition"] == home, event_id
    # The re-routed copies say where they came from, and carry the scope's key.
    reader = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await reader.start()
    try:
        tp = TopicPartition(settings.topics.input, home)
        reader.assign([tp])
        reader.seek(tp, 0)
        copies = (await reader.getmany(tp, timeout_ms=2000)).get(tp, [])
    finally:
        await reader.stop()
    rerouted = {
        _json.loads(r.value)["event_id"]: dict(r.headers)["memdedup-rerouted-from"].decode()
        for r in copies
        if "memdedup-rerouted-from" in dict(r.headers)
    }
    assert set(rerouted) >= {"x2", "x3"}
    assert rerouted["x2"].startswith(f"{settings.topics.input}/{wrong}/")
    assert r_key_of(copies, "x3") == key


def r_key_of(records: Any, event_id: str) -> bytes | None:
    import json as _json

    for record in records:
        if _json.loads(record.value)["event_id"] == event_id:
            return record.key  # type: ignore[no-any-return]
    return None


async def test_a_skip_stores_a_seen_update_that_a_restore_and_the_changelog_apply(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    """A skipped duplicate of a stored memory writes its seen count, not the whole
    memory again: the memory's own changelog record stays the one written when it
    was accepted, and a fresh store restored from the changelog, and the state
    `memdedup compact` reads from it, both carry the count and times."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    waves = [
        [event("s1", "User keeps bees on the roof")],
        [event("s2", "user keeps bees on the roof.")],
        [event("s3", "User keeps bees on the roof")],
    ]
    store = EdgeMemoryStore(**edge_store_args(settings))
    async with running_consumer(settings, real_embedder, store):
        # One wave at a time: each repeat meets the memory stored, not this batch's.
        for done, wave in enumerate(waves, start=1):
            await produce(settings, wave)
            assert await wait_committed(settings, done, timeout_s=30)
        outputs = await read_outputs(settings, at_least=3, settle_s=0.5)
    decided = {o.body["event_id"]: o.body for o in outputs}
    memory_id = decided["s1"]["memory_id"]
    assert [decided[e]["decision"] for e in ("s2", "s3")] == ["skipped", "skipped"]
    assert decided["s3"]["memory"]["seen_count"] == 3
    last_seen = decided["s3"]["memory"]["last_seen_at"]

    records = [r async for r in read_all(settings, [settings.topics.changelog])]
    keys = [r.key.decode() for r in records]
    assert keys.count(memory_id) == 1  # stored whole once, when accepted
    assert keys.count(codec.seen_point_id(memory_id)) == 2
    seen_record = next(r for r in records if r.key.decode() == codec.seen_point_id(memory_id))
    assert b'"vector"' not in seen_record.value
    # Internal records carry none of the broker's headers; decisions keep them.
    assert all(not r.headers for r in records)
    assert all("correlation_id" in o.headers for o in outputs)

    async with restored_from_changelog(settings, tmp_path / "fresh") as fresh:
        restored = (await fresh.get_memories(0, [memory_id]))[memory_id]
    assert restored.seen_count == 3
    assert restored.last_seen_at is not None
    assert restored.last_seen_at.isoformat() == last_seen.replace("Z", "+00:00")
    assert restored.vector is not None

    state = await state_from_changelog(settings)
    (from_changelog,) = [m for ms in state.memories.values() for m in ms]
    assert (from_changelog.memory_id, from_changelog.seen_count) == (memory_id, 3)
