"""The cached partitioner picks exactly what aiokafka's default one does."""

from __future__ import annotations

import pytest
from aiokafka.partitioner import DefaultPartitioner, murmur2

from consumer.kafka.partitioning import CachedDefaultPartitioner, canonical_partition, key_hash

KEYS = [b"", b"a", b"tenant-1/prefs", "t\u00e9nant/\u2713".encode(), bytes(range(256)), b"x" * 1000]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("count", [1, 3, 12, 100])
def test_same_partition_as_aiokafka_default(key: bytes, count: int) -> None:
    partitions = list(range(count))
    cached = CachedDefaultPartitioner()
    expected = DefaultPartitioner()(key, partitions, partitions)
    assert cached(key, partitions, partitions) == expected
    assert cached(key, partitions, partitions) == expected  # from the cache
    assert canonical_partition(key, count) == expected
    assert key_hash(key) == murmur2(key) & 0x7FFFFFFF


def test_keyless_records_go_to_an_available_partition() -> None:
    cached = CachedDefaultPartitioner()
    assert {cached(None, [0, 1, 2], [2]) for _ in range(20)} == {2}
    assert {cached(None, [0, 1, 2], []) for _ in range(200)} == {0, 1, 2}


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        canonical_partition(b"k", 0)
