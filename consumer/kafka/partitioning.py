"""One canonical partitioner, so a scope is always decided against one state.

Producers in one platform may mix clients: Java clients and aiokafka hash keys
with murmur2, librdkafka-based clients default to CRC32. memdedup defines the
partition of a scope as murmur2 of its key (the Java default), checks every
record against it, and re-routes records that landed elsewhere.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache

from aiokafka.partitioner import murmur2


@lru_cache(maxsize=65_536)
def key_hash(key: bytes) -> int:
    """Positive murmur2 of a key. Cached: aiokafka's murmur2 is pure Python
    (~2.5 us), paid per record in and per record out, over few distinct keys
    (one per scope)."""
    return int(murmur2(key) & 0x7FFFFFFF)


def canonical_partition(key: bytes, partition_count: int) -> int:
    """Kafka's default for keyed records: positive murmur2 modulo partitions."""
    if partition_count <= 0:
        raise ValueError("partition_count must be positive")
    return key_hash(key) % partition_count


class CachedDefaultPartitioner:
    """aiokafka's default partitioner (murmur2 of the key; random without one),
    with the key hash cached."""

    def __call__(
        self, key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]
    ) -> int:
        if key is None:
            return random.choice(available or all_partitions)
        return all_partitions[key_hash(key) % len(all_partitions)]
