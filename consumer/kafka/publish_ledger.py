"""What the broker has acknowledged for input records whose offsets are not
committed yet, so that a retried batch publishes each answer once.

A batch is retried whole after a transient failure (and rewound and fetched
again after a long one), but some of its records may have been acknowledged
before the failure. Without this ledger every attempt would publish them again:
identical copies, but copies all the same, one set per attempt.

An outgoing record is known by the input record it answers (`source`), its topic
and its place among that input record's records to that topic. Entries go when
the input offsets are committed, or the partition is given up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from consumer.kafka.records import OutgoingRecord

# (input partition, input offset, output topic, ordinal)
LedgerKey = tuple[int, int, str, int]


def ledger_keys(records: Sequence[OutgoingRecord]) -> list[LedgerKey | None]:
    """Each record's key; None for a record tied to no input record."""
    seen: dict[tuple[int, int, str], int] = {}
    keys: list[LedgerKey | None] = []
    for record in records:
        if record.source is None:
            keys.append(None)
            continue
        partition, offset = record.source
        slot = (partition, offset, record.topic)
        ordinal = seen.get(slot, 0)
        seen[slot] = ordinal + 1
        keys.append((partition, offset, record.topic, ordinal))
    return keys


@dataclass(slots=True)
class PublishLedger:
    # input partition -> output key -> the offset the broker stored it at
    _acknowledged: dict[int, dict[LedgerKey, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(keys) for keys in self._acknowledged.values())

    def offset_of(self, key: LedgerKey | None) -> int | None:
        if key is None:
            return None
        return self._acknowledged.get(key[0], {}).get(key)

    def acknowledged(self, key: LedgerKey | None, offset: int) -> None:
        if key is not None:
            self._acknowledged.setdefault(key[0], {})[key] = offset

    def committed(self, partition: int, next_offset: int) -> None:
        """Input offsets below `next_offset` are committed: never retried again."""
        keys = self._acknowledged.get(partition)
        if not keys:
            return
        for key in [k for k in keys if k[1] < next_offset]:
            del keys[key]

    def forget(self, partitions: Iterable[int]) -> None:
        """Partitions given up: their next owner replays the stored decisions."""
        for partition in partitions:
            self._acknowledged.pop(partition, None)
