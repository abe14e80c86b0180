"""Kafka records as plain data, independent of the client library."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = "application/json"
OCTET_STREAM = "application/octet-stream"


@dataclass(frozen=True, slots=True)
class InputRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] = ()

    @classmethod
    def from_consumer_record(cls, record: Any) -> InputRecord:
        return cls(
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key,
            value=record.value,
            timestamp_ms=record.timestamp,
            headers=tuple(record.headers or ()),
        )


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    topic: str
    key: bytes | None
    value: bytes
    headers: dict[str, str] = field(default_factory=dict)
    # None: the producer's partitioner picks from the key.
    partition: int | None = None
    # False: an internal record (the changelog) that nobody reads headers of gets
    # none of the broker's (content type, a fresh correlation id).
    broker_headers: bool = True
    # Published with a null value (`value` is ignored): a compacted topic then
    # forgets the key.
    tombstone: bool = False
    # The input record (partition, offset) this record answers: a retry of its
    # batch does not publish again what the broker acknowledged for it
    # (consumer.kafka.publish_ledger). None: not tied to one input record.
    source: tuple[int, int] | None = None
    # The body's type, as the `content-type` header (OCTET_STREAM for a dead
    # letter, whose body is the input's bytes, whatever they are); None writes none.
    content_type: str | None = JSON
