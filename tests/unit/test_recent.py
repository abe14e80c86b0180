"""RecentCache: TTL, capacity, partition drops and counters."""

from __future__ import annotations

import pytest

from consumer.domain.recent import RecentCache


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def key(n: int | str) -> tuple[str, str, str]:
    return ("tenant", "ns", f"hash-{n}")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_put_then_get(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=10, max_entries=10, clock=clock)
    cache.put(key(1), "mem-1", partition=3)
    entry = cache.get(key(1))
    assert entry is not None
    assert (entry.memory_id, entry.partition, entry.expires_at) == ("mem-1", 3, 1010.0)
    assert len(cache) == 1


def test_ttl_expiry(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=10, max_entries=10, clock=clock)
    cache.put(key(1), "mem-1", 0)
    clock.advance(9.999)
    assert cache.get(key(1)) is not None
    clock.advance(0.001)  # exactly at expires_at: gone
    assert cache.get(key(1)) is None
    assert len(cache) == 0


def test_put_refreshes_ttl(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=10, max_entries=10, clock=clock)
    cache.put(key(1), "mem-1", 0)
    clock.advance(8)
    cache.put(key(1), "mem-2", 0)
    clock.advance(8)
    entry = cache.get(key(1))
    assert entry is not None
    assert entry.memory_id == "mem-2"


def test_capacity_evicts_least_recently_put(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=100, max_entries=3, clock=clock)
    for n in (1, 2, 3):
        cache.put(key(n), f"mem-{n}", 0)
    # A get does not protect an entry; a put does.
    assert cache.get(key(1)) is not None
    cache.put(key(2), "mem-2b", 0)
    cache.put(key(4), "mem-4", 0)
    assert len(cache) == 3
    assert cache.get(key(1)) is None
    assert cache.get(key(3)) is not None
    assert cache.get(key(2)) is not None
    assert cache.get(key(4)) is not None
    cache.put(key(5), "mem-5", 0)
    assert cache.get(key(3)) is None


def test_keys_are_scoped(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=100, max_entries=10, clock=clock)
    cache.put(("t1", "ns", "h"), "m1", 0)
    assert cache.get(("t2", "ns", "h")) is None
    assert cache.get(("t1", "other", "h")) is None
    assert cache.get(("t1", "ns", "h")) is not None


def test_drop_partitions(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=100, max_entries=10, clock=clock)
    cache.put(key(1), "m1", 0)
    cache.put(key(2), "m2", 1)
    cache.put(key(3), "m3", 2)
    cache.put(key(4), "m4", 1)
    cache.drop_partitions(iter([1, 2]))
    assert len(cache) == 1
    assert cache.get(key(1)) is not None
    assert cache.get(key(2)) is None
    cache.drop_partitions([])
    cache.drop_partitions([7])
    assert len(cache) == 1


def test_hit_and_miss_counters(clock: FakeClock) -> None:
    cache = RecentCache(ttl_s=10, max_entries=10, clock=clock)
    assert (cache.hits, cache.misses) == (0, 0)
    cache.get(key(1))
    cache.put(key(1), "m1", 0)
    cache.get(key(1))
    cache.get(key(1))
    clock.advance(10)
    cache.get(key(1))  # expired counts as a miss
    assert (cache.hits, cache.misses) == (2, 2)


@pytest.mark.parametrize(("ttl", "size"), [(0, 10), (-1, 10), (10, 0), (10, -5)])
def test_rejects_non_positive_limits(ttl: float, size: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        RecentCache(ttl_s=ttl, max_entries=size)
