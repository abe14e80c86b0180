"""Bounded TTL cache of what this consumer decided recently.

Keyed by (tenant, namespace, content hash); it catches repeats that have not
reached the store yet (in-flight, same batch) and repeats of texts that were
merged or skipped, whose hash has no point of its own.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

ScopedHash = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class RecentEntry:
    memory_id: str
    partition: int
    expires_at: float


class RecentCache:
    def __init__(
        self,
        *,
        ttl_s: float,
        max_entries: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_s <= 0 or max_entries <= 0:
            raise ValueError("ttl_s and max_entries must be positive")
        self._ttl_s = ttl_s
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[ScopedHash, RecentEntry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: ScopedHash) -> RecentEntry | None:
        entry = self.peek(key)
        if entry is None:
            self._entries.pop(key, None)  # expired, if there
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def peek(self, key: ScopedHash) -> RecentEntry | None:
        """`get` without counting a hit or miss and without evicting."""
        entry = self._entries.get(key)
        if entry is None or entry.expires_at <= self._clock():
            return None
        return entry

    def put(self, key: ScopedHash, memory_id: str, partition: int) -> None:
        self._entries[key] = RecentEntry(memory_id, partition, self._clock() + self._ttl_s)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def drop_partitions(self, partitions: Iterable[int]) -> None:
        """Forget scopes of partitions this consumer no longer owns."""
        gone = set(partitions)
        for key in [k for k, e in self._entries.items() if e.partition in gone]:
            del self._entries[key]
