"""Replaying the input topic: identical decisions, no new memories."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from structlog.testing import capture_logs

from consumer.cli.replay import ReplayRefused, ResetTarget, reset_offsets
from consumer.domain.normalize import decision_id_for
from consumer.kafka.topic_reader import read_all
from consumer.kafka.topics import DEFAULT_RETENTION_MS, DEFAULT_SEGMENT_MS, topic_retention
from consumer.service.retention import warn_if_shorter_than_input
from consumer.settings import RetentionSettings, Settings
from tests.integration.harness import (
    StoreFactory,
    committed_offsets,
    decisions_by_event,
    event,
    make_settings,
    produce,
    read_outputs,
    restored_from_changelog,
    running_consumer,
    wait_committed,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


async def test_replay_from_earliest_reemits_identical_decisions(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory("edge", settings)
    items = [
        event("q1", "User prefers Python for backend work"),
        event("q2", "user prefers python for backend work!"),
        event("q3", "Python is the user's preferred language for backend work"),
        event("q4", "User's favourite colour is green", namespace="bio"),
        event("q5", "User has two sisters", tenant="globex"),
    ]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            first = await read_outputs(settings, at_least=len(items), settle_s=0.5)

            assert await wait_committed(settings, len(items), timeout_s=15)
        memories = await stores.count()
        committed = await reset_offsets(
            settings.kafka,
            group=settings.kafka.group_id,
            topic=settings.topics.input,
            target=ResetTarget(earliest=True),
            wait_s=10,
        )
        assert set(committed.values()) == {0}
        async with running_consumer(settings, real_embedder, await stores.open()):
            both = await read_outputs(settings, at_least=2 * len(items), settle_s=1.0)
        assert await stores.count() == memories
    finally:
        await stores.close()
    print(
        f"events={len(items)} first_pass={len(first)} after_replay={len(both)} memories={memories}"
    )
    assert sorted(o.value for o in both) == sorted([o.value for o in first] * 2)


async def test_replay_to_an_offset_only_repeats_what_follows(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    stores = StoreFactory("edge", settings)
    items = [
        event(f"o{i}", text)
        for i, text in enumerate(["User owns a kayak", "User speaks Welsh", "User runs marathons"])
    ]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await read_outputs(settings, at_least=3)

            assert await wait_committed(settings, 3, timeout_s=15)
        assert await reset_offsets(
            settings.kafka,
            group=settings.kafka.group_id,
            topic=settings.topics.input,
            target=ResetTarget(offsets=((0, 2),)),
            wait_s=10,
        ) == {0: 2}
        with pytest.raises(ReplayRefused, match="outside"):
            await reset_offsets(
                settings.kafka,
                group=settings.kafka.group_id,
                topic=settings.topics.input,
                target=ResetTarget(offsets=((0, 99),)),
            )
        async with running_consumer(settings, real_embedder, await stores.open()):
            outputs = await read_outputs(settings, at_least=4, settle_s=1.0)
    finally:
        await stores.close()
    event_ids = sorted(o.body["event_id"] for o in outputs)
    assert event_ids == ["o0", "o1", "o2", "o2"]


async def test_replay_is_refused_while_the_group_has_active_members(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory("edge", settings)
    items = [
        event("w1", "User collects vinyl records"),
        event("w2", "User is a night owl", namespace="bio"),
    ]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await read_outputs(settings, at_least=len(items))

            assert await wait_committed(settings, len(items), timeout_s=15)
            before = await committed_offsets(settings)
            with pytest.raises(ReplayRefused, match=r"active members|could not join"):
                await reset_offsets(
                    settings.kafka,
                    group=settings.kafka.group_id,
                    topic=settings.topics.input,
                    target=ResetTarget(earliest=True),
                    join_timeout_s=8,
                )
            assert await committed_offsets(settings) == before
    finally:
        await stores.close()


async def run_retention_scenario(
    kind: str, bootstrap: str, tmp_path: Path, embedder: Any
) -> Settings:
    """On a `kind` store, with decisions kept one second: r1 and r2 decided; once
    their decisions are over a second old, r3's batch prunes them (r3's own stays);
    then r1 is delivered again. Returns the run's settings."""
    settings = make_settings(
        bootstrap,
        tmp_path,
        topics={"partitions": 1},
        retention={"decisions_hours": 1 / 3600, "interval_s": 0.05},
    )
    stores = StoreFactory(kind, settings)
    first = [event("r1", "User lives in Paris"), event("r2", "User drinks green tea")]
    try:
        store = await stores.open()
        async with running_consumer(settings, embedder, store):
            await produce(settings, first)
            await read_outputs(settings, at_least=2)
            assert set(await store.get_decisions(0, ["r1", "r2"])) == {"r1", "r2"}
            await asyncio.sleep(1.2)
            # The next batch of the partition prunes the decisions older than 1 s.
            await produce(settings, [event("r3", "User owns a red bicycle")])
            await read_outputs(settings, at_least=3)

            async def pruned() -> bool:
                return not await store.get_decisions(0, ["r1", "r2"])

            assert await wait_until(pruned, timeout_s=10)
            assert set(await store.get_decisions(0, ["r3"])) == {"r3"}
            await produce(settings, [event("r1", "User lives in Paris")])
            outputs = decisions_by_event(await read_outputs(settings, at_least=4), settings)
        assert await stores.count() == 3
    finally:
        await stores.close()
    accepted, again = outputs["r1"]
    assert accepted["decision"] == "accepted"
    # Decided again, not replayed: accepted into the memory it made, no new one.
    assert (again["decision"], again["reason"]) == ("accepted", "new")
    assert again["memory_id"] == accepted["memory_id"]
    return settings


async def test_decisions_past_their_retention_are_deleted_from_a_server_store(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    """The server adapter (qdrant-client local mode), no changelog."""
    await run_retention_scenario("local", local_broker.bootstrap_servers, tmp_path, real_embedder)


async def test_decisions_past_their_retention_are_deleted_and_stay_deleted_in_a_restore(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    """Embedded store: decisions older than retention.decisions_hours (here one
    second) go from the shard and, as tombstones, from the changelog; a shard
    restored from it lacks them too."""
    settings = await run_retention_scenario(
        "edge", local_broker.bootstrap_servers, tmp_path, real_embedder
    )

    records = [r async for r in read_all(settings, [settings.topics.changelog])]
    tombstoned = {r.key.decode() for r in records if r.value is None}
    assert {decision_id_for("r1"), decision_id_for("r2")} <= tombstoned

    async with restored_from_changelog(settings, tmp_path / "fresh") as fresh:
        restored = await fresh.get_decisions(0, ["r1", "r2", "r3"])
        assert await fresh.count_memories(0) == 3
    # r2's decision is gone; r1's is the one its redelivery wrote after the tombstone.
    assert "r2" not in restored
    assert restored["r1"].decision.value == "accepted"


async def test_a_decision_retention_shorter_than_the_input_topic_keeps_events_is_warned_of(
    local_broker: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    admin = AIOKafkaAdminClient(bootstrap_servers=local_broker.bootstrap_servers)
    await admin.start()
    try:
        hour = 3_600_000
        configs = {"retention.ms": str(12 * hour), "segment.ms": str(hour)}
        await admin.create_topics(
            [
                NewTopic(settings.topics.input, 1, 1, topic_configs=configs),
                NewTopic(f"{settings.topics.input}.plain", 1, 1),
            ]
        )
    finally:
        await admin.close()
    kept = await topic_retention(settings, settings.topics.input)
    assert (kept.retention_ms, kept.segment_ms, kept.longest_kept_hours) == (12 * hour, hour, 13)
    plain = await topic_retention(settings, f"{settings.topics.input}.plain")
    assert (plain.retention_ms, plain.segment_ms) == (DEFAULT_RETENTION_MS, DEFAULT_SEGMENT_MS)

    def with_hours(hours: float | None) -> Any:
        return settings.model_copy(update={"retention": RetentionSettings(decisions_hours=hours)})

    with capture_logs() as logs:
        assert await warn_if_shorter_than_input(with_hours(12.5))
        assert not await warn_if_shorter_than_input(with_hours(13))
        assert not await warn_if_shorter_than_input(with_hours(None))
    [warning] = [e for e in logs if e["log_level"] == "warning"]
    assert warning["event"] == "decision_retention_shorter_than_input"
    assert (warning["decisions_hours"], warning["input_kept_hours"]) == (12.5, 13)
