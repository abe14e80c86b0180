"""Replaying the input topic: identical decisions, no new memories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.replay import ReplayRefused, ResetTarget, reset_offsets
from tests.integration.harness import (
    StoreFactory,
    committed_offsets,
    event,
    make_settings,
    produce,
    read_outputs,
    running_consumer,
    wait_committed,
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
