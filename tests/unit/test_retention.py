"""Decision retention's schedule and write order, on a fake store and changelog."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.errors import TopicAuthorizationFailedError
from structlog.testing import capture_logs

from consumer.errors import StoreUnavailable
from consumer.kafka.topics import TopicRetention
from consumer.observability.metrics import ServiceMetrics
from consumer.service import retention as retention_module
from consumer.service.retention import DecisionRetention
from consumer.settings import RetentionSettings, load_settings
from consumer.state import codec
from consumer.state.changelog import _changes
from consumer.state.durable import DurableStore

HOUR = 3600.0


class FakeStore:
    def __init__(self, decided_at: dict[int, dict[str, float]]) -> None:
        # partition -> decision id -> decided at
        self.decided_at = decided_at
        self.calls: list[tuple[Any, ...]] = []
        self.fail_apply = False

    async def expired_decisions(self, partition: int, before: float, limit: int) -> list[str]:
        self.calls.append(("expired", partition, before, limit))
        found = sorted(i for i, at in self.decided_at.get(partition, {}).items() if at < before)
        return found[:limit]

    async def apply_points(
        self,
        partition: int,
        points: Sequence[Any],
        *,
        changelog_offset: int | None = None,
        deleted_ids: Sequence[str] = (),
    ) -> None:
        self.calls.append(("apply", partition, list(points), changelog_offset, list(deleted_ids)))
        if self.fail_apply:
            raise StoreUnavailable("store down")
        for point_id in deleted_ids:
            self.decided_at[partition].pop(point_id, None)

    def shards(self) -> FakeStore:
        return self


class FakeChangelog:
    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.state: DurableStore | None = None
        self.offset = 100

    async def append(
        self, partition: int, points: Sequence[Any], *, deleted_ids: Sequence[str] = ()
    ) -> int:
        # Marked behind before the append reaches the changelog.
        assert self.state is not None
        assert self.state.is_behind(partition)
        self.store.calls.append(("append", partition, list(points), list(deleted_ids)))
        self.offset += len(deleted_ids)
        return self.offset


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def wall(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


def make(
    store: FakeStore,
    *,
    changelog: bool = True,
    max_per_run: int = 100,
    membership: Any = None,
) -> tuple[DecisionRetention, Clock, DurableStore, ServiceMetrics]:
    clock, metrics = Clock(), ServiceMetrics()
    fake_changelog = FakeChangelog(store) if changelog else None
    state = DurableStore(
        store,  # type: ignore[arg-type]
        changelog=fake_changelog,  # type: ignore[arg-type]
        membership=membership,
    )
    if fake_changelog is not None:
        fake_changelog.state = state
    retention = DecisionRetention(
        settings=RetentionSettings(decisions_hours=24, interval_s=300, max_per_run=max_per_run),
        state=state,
        metrics=metrics,
        clock=clock.wall,
        monotonic=clock.monotonic,
    )
    return retention, clock, state, metrics


def pruned(metrics: ServiceMetrics) -> float:
    return metrics.pruned_decisions._value.get()  # type: ignore[no-any-return]


async def test_decisions_older_than_the_retention_are_tombstoned_then_deleted() -> None:
    now = Clock().now
    store = FakeStore({0: {"old": now - 25 * HOUR, "new": now - 23 * HOUR}, 1: {}})
    retention, _, state, metrics = make(store)
    assert await retention.after_batch([0, 1]) == 1
    assert store.calls == [
        ("expired", 0, now - 24 * HOUR, 100),
        ("append", 0, [], ["old"]),
        ("apply", 0, [], 101, ["old"]),
        ("expired", 1, now - 24 * HOUR, 100),
    ]
    assert store.decided_at[0] == {"new": now - 23 * HOUR}
    assert not state.is_behind(0)
    assert pruned(metrics) == 1


async def test_each_partition_is_checked_once_per_interval() -> None:
    now = Clock().now
    store = FakeStore({0: {"a": now - 30 * HOUR}})
    retention, clock, _, _ = make(store)
    await retention.after_batch([0])
    store.decided_at[0]["b"] = now - 30 * HOUR
    clock.now += 299
    assert await retention.after_batch([0]) == 0
    assert [c[0] for c in store.calls].count("expired") == 1
    clock.now += 1
    assert await retention.after_batch([0]) == 1
    assert store.decided_at[0] == {}


async def test_a_partition_with_more_than_a_run_is_checked_again_at_its_next_batch() -> None:
    now = Clock().now
    store = FakeStore({0: {f"d{n}": now - 48 * HOUR for n in range(5)}})
    retention, _, _, metrics = make(store, max_per_run=2)
    assert [await retention.after_batch([0]) for _ in range(4)] == [2, 2, 1, 0]
    assert store.decided_at[0] == {}
    assert pruned(metrics) == 5


async def test_a_failed_delete_leaves_the_shard_behind_and_never_fails_the_batch() -> None:
    now = Clock().now
    store = FakeStore({0: {"old": now - 25 * HOUR}})
    retention, clock, state, metrics = make(store)
    store.fail_apply = True
    assert await retention.after_batch([0]) == 0
    # The tombstone is in the changelog: the shard is restored before its next batch.
    assert state.is_behind(0)
    assert metrics.prune_failures._value.get() == 1
    store.fail_apply = False
    clock.now += 300
    assert await retention.after_batch([0]) == 1


async def test_without_a_changelog_deletes_are_fenced_by_membership() -> None:
    now = Clock().now
    store = FakeStore({0: {"old": now - 25 * HOUR}})
    checks: list[str] = []

    async def ensure() -> None:
        checks.append("ensure")

    async def confirm(generation: int | None) -> None:
        checks.append("confirm")

    fence = SimpleNamespace(ensure=ensure, confirm=confirm)
    retention, _, _, _ = make(store, changelog=False, membership=fence)
    assert await retention.after_batch([0]) == 1
    assert checks == ["ensure", "confirm"]
    assert store.calls[-1] == ("apply", 0, [], None, ["old"])


def test_retention_needs_its_hours() -> None:
    with pytest.raises(ValueError, match="decisions_hours"):
        DecisionRetention(
            settings=RetentionSettings(),
            state=DurableStore(FakeStore({})),  # type: ignore[arg-type]
            metrics=ServiceMetrics(),
        )


def record(key: str, point: codec.RawPoint | None) -> SimpleNamespace:
    return SimpleNamespace(key=key.encode(), value=point.to_bytes() if point else None)


def test_a_changelog_run_applies_tombstones_in_order() -> None:
    a1, a2, b, c = (
        codec.RawPoint(point_id, [], {"kind": "decision", "n": n})
        for point_id, n in (("a", 1), ("a", 2), ("b", 3), ("c", 4))
    )
    # a: written, deleted, written again; b: written then deleted; c: written;
    # d: deleted only (written in an earlier run). An empty value is a tombstone too.
    records = [record("a", a1), record("b", b), record("a", None), record("a", a2)]
    records += [record("b", None), record("c", c), SimpleNamespace(key=b"d", value=b"")]
    points, deleted = _changes(records)
    assert [p.payload["n"] for p in points] == [2, 4]
    assert sorted(deleted) == ["a", "b", "d"]


def test_a_topic_keeps_a_record_up_to_its_retention_plus_a_segment() -> None:
    hour = 3_600_000
    assert TopicRetention(retention_ms=24 * hour, segment_ms=hour).longest_kept_hours == 25
    assert TopicRetention(retention_ms=-1, segment_ms=hour).longest_kept_hours == math.inf


async def test_an_unreadable_input_topic_configuration_is_logged_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def refuse(settings: Any, topic: str) -> TopicRetention:
        raise TopicAuthorizationFailedError()

    monkeypatch.setattr(retention_module, "topic_retention", refuse)
    settings = load_settings(retention={"decisions_hours": 1})
    with capture_logs() as logs:
        assert not await retention_module.warn_if_shorter_than_input(settings)
    assert [(e["event"], e["error"]) for e in logs] == [
        ("input_retention_unknown", "TopicAuthorizationFailedError")
    ]
