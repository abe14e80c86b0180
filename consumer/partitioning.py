"""One canonical partitioner, so a scope is always decided against one state.

Producers in one platform may mix clients: Java clients and aiokafka hash keys
with murmur2, librdkafka-based clients default to CRC32. memdedup defines the
partition of a scope as murmur2 of its key (the Java default), checks every
record against it, and re-routes records that landed elsewhere.
"""

from __future__ import annotations

from aiokafka.partitioner import murmur2


def canonical_partition(key: bytes, partition_count: int) -> int:
    """Kafka's default for keyed records: positive murmur2 modulo partitions."""
    if partition_count <= 0:
        raise ValueError("partition_count must be positive")
    return int(murmur2(key) & 0x7FFFFFFF) % partition_count
