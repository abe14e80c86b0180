"""PartitionProgress: lag from the broker's end offsets; a partition is stuck when
records wait and its committed offset has not moved for the bound."""

from __future__ import annotations

from typing import Any

from aiokafka import TopicPartition

from consumer.observability.metrics import ServiceMetrics
from consumer.observability.progress import PartitionProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def progress(clock: Clock, metrics: ServiceMetrics | None = None) -> PartitionProgress:
    return PartitionProgress(
        topic="in", stuck_after_s=10.0, metrics=metrics or ServiceMetrics(), clock=clock
    )


def gauge(metrics: ServiceMetrics, name: str, **labels: str) -> float | None:
    value = metrics.registry.get_sample_value(name, labels or None)
    return value


def test_lag_is_the_end_offset_past_the_committed_one() -> None:
    clock = Clock()
    metrics = ServiceMetrics()
    watched = progress(clock, metrics)
    watched.fetched({0: 5})
    watched.observe({0: 12})
    assert watched.lag(0) == 7
    assert gauge(metrics, "memdedup_consumer_lag", partition="0") == 7
    watched.committed({0: 12})
    watched.observe({0: 12})
    assert watched.lag(0) == 0


def test_a_partition_waiting_without_commits_past_the_bound_is_stuck() -> None:
    clock = Clock()
    metrics = ServiceMetrics()
    watched = progress(clock, metrics)
    watched.committed({0: 3, 1: 3})
    watched.observe({0: 4, 1: 3})
    clock.now += 9
    watched.observe({0: 4, 1: 3})
    assert watched.stuck == []
    clock.now += 2
    watched.observe({0: 4, 1: 3})
    assert watched.stuck == [0]
    assert gauge(metrics, "memdedup_stuck_partitions") == 1
    assert gauge(metrics, "memdedup_oldest_waiting_seconds") == 11
    # It moves: no longer stuck, though records still wait (the wait restarts).
    watched.committed({0: 4})
    assert gauge(metrics, "memdedup_stuck_partitions") == 0
    watched.observe({0: 6, 1: 3})
    assert watched.stuck == []
    assert watched.waiting_s(0) == 0
    assert gauge(metrics, "memdedup_stuck_partitions") == 0


def test_a_busy_partition_that_keeps_committing_is_never_stuck() -> None:
    clock = Clock()
    watched = progress(clock)
    watched.committed({0: 0})
    for offset in range(1, 30):
        clock.now += 1
        watched.observe({0: offset + 100})
        watched.committed({0: offset})
    assert watched.stuck == []


def test_partitions_given_up_stop_counting() -> None:
    clock = Clock()
    metrics = ServiceMetrics()
    watched = progress(clock, metrics)
    watched.committed({0: 0, 1: 0})
    watched.observe({0: 5, 1: 5})
    clock.now += 20
    watched.observe({0: 5, 1: 5})
    assert watched.stuck == [0, 1]
    watched.revoked([0])
    # Partition 1 is no longer in the assignment either.
    watched.observe({})
    assert watched.stuck == []
    assert gauge(metrics, "memdedup_stuck_partitions") == 0
    assert gauge(metrics, "memdedup_consumer_lag", partition="0") is None


class FakeConsumer:
    def __init__(self, committed: dict[int, int | None], ends: dict[int, int]) -> None:
        self._committed = committed
        self._ends = ends

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition("in", p) for p in self._ends} | {TopicPartition("other", 0)}

    async def committed(self, tp: TopicPartition) -> int | None:
        return self._committed[tp.partition]

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
        assert all(tp.topic == "in" for tp in tps)
        return {tp: self._ends[tp.partition] for tp in tps}


async def test_a_poll_reads_committed_and_end_offsets_of_the_input_topic_only() -> None:
    clock = Clock()
    watched = progress(clock)
    await watched.poll(FakeConsumer({0: 4, 1: None}, {0: 9, 1: 2}))
    assert watched.lag(0) == 5
    # Nothing committed yet and nothing fetched: the lag is not known.
    assert watched.lag(1) == 0


def test_a_readiness_check_brings_the_gauges_up_to_date() -> None:
    clock = Clock()
    metrics = ServiceMetrics()
    watched = progress(clock, metrics)
    watched.committed({0: 3})
    watched.observe({0: 4})
    clock.now += 11  # past the bound, before the next poll
    assert gauge(metrics, "memdedup_stuck_partitions") == 0
    assert watched.refresh() == [0]
    assert gauge(metrics, "memdedup_stuck_partitions") == 1
