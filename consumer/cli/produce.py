"""Publishing input events from JSON Lines (for users, the demo and tests)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from consumer.errors import PermanentError
from consumer.kafka.publisher import DEFAULT_MAX_REQUEST_BYTES
from schemas import scope_key


def key_for(raw: bytes) -> bytes | None:
    """`{tenant_id}/{namespace}` when the line names both; bad lines go unkeyed
    (they are published as they are, so the consumer can dead-letter them)."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    tenant, namespace = document.get("tenant_id"), document.get("namespace")
    if isinstance(tenant, str) and isinstance(namespace, str):
        return scope_key(tenant, namespace).encode()
    return None


def read_lines(path: Path) -> list[bytes]:
    return [line for _, line in read_numbered_lines(path)]


def read_numbered_lines(path: Path) -> list[tuple[int, bytes]]:
    """The non-blank lines with their line numbers in the file (from 1), so an
    error can point at the line to fix."""
    return [
        (number, line)
        for number, line in enumerate(path.read_bytes().splitlines(), start=1)
        if line.strip()
    ]


def record_size(line: bytes) -> int:
    """The size the producer gives the line's record, checked against its
    max_request_size (aiokafka's own estimate, so both agree)."""
    return int(DefaultRecordBatchBuilder.estimate_size_in_bytes(key_for(line), line, []))


@dataclass(frozen=True, slots=True)
class OversizedLine:
    index: int  # position among the lines given, from 0
    size: int
    limit: int


def first_oversized(lines: Sequence[bytes], *, limit: int) -> OversizedLine | None:
    """The first line whose record would exceed `limit` bytes, if any."""
    for index, line in enumerate(lines):
        size = record_size(line)
        if size > limit:
            return OversizedLine(index, size, limit)
    return None


class LineTooLarge(PermanentError):
    """A line does not fit a produce request. `published`: lines acknowledged
    before it; `published_after`: after it (only where the broker refused it,
    its own limit being lower, as later lines were already in flight)."""

    def __init__(
        self,
        oversized: OversizedLine,
        *,
        published: int,
        published_after: int = 0,
        by_broker: bool = False,
    ) -> None:
        super().__init__(
            f"line {oversized.index + 1} is {oversized.size} bytes, over {oversized.limit}"
        )
        self.oversized = oversized
        self.published = published
        self.published_after = published_after
        self.by_broker = by_broker


async def produce_lines(
    lines: Iterable[bytes],
    *,
    bootstrap_servers: str,
    topic: str,
    client_kwargs: dict[str, Any] | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> int:
    """Publish each line, keyed by its scope; returns how many were acknowledged.
    `client_kwargs`: connection security (consumer.kafka.security.aiokafka_kwargs).
    A line over `max_request_bytes` raises LineTooLarge once the lines before it
    are acknowledged; nothing after it is sent."""
    lines = list(lines)
    oversized = first_oversized(lines, limit=max_request_bytes)
    to_send = lines if oversized is None else lines[: oversized.index]
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers,
        acks="all",
        max_request_size=max_request_bytes,
        **(client_kwargs or {}),
    )
    await producer.start()
    pending: list[asyncio.Future[Any]] = []
    refused: int | None = None  # the line the producer or the broker refused for its size
    try:
        try:
            for line in to_send:
                pending.append(await producer.send(topic, value=line, key=key_for(line)))
        except MessageSizeTooLargeError:
            refused = len(pending)
        outcomes = await asyncio.gather(*pending, return_exceptions=True)
    finally:
        await producer.stop()
    ok = [not isinstance(outcome, BaseException) for outcome in outcomes]
    # The broker's own limit can be lower than ours: it refuses the record then.
    too_large = [i for i, o in enumerate(outcomes) if isinstance(o, MessageSizeTooLargeError)]
    by_broker = bool(too_large) and (refused is None or too_large[0] < refused)
    if by_broker:
        refused = too_large[0]
    if refused is not None:
        raise LineTooLarge(
            OversizedLine(refused, record_size(to_send[refused]), max_request_bytes),
            published=sum(ok[:refused]),
            published_after=sum(ok[refused + 1 :]),
            by_broker=by_broker,
        )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    if oversized is not None:
        raise LineTooLarge(oversized, published=len(to_send))
    return len(to_send)


def _lines(count: int) -> str:
    return f"{count:,} line" + ("" if count == 1 else "s")


def too_large_message(
    error: LineTooLarge, *, path: Path, line_number: int, max_event_bytes: int
) -> str:
    """One line for `memdedup produce`: which line, how big, what was published,
    what to do."""
    size, limit = error.oversized.size, error.oversized.limit
    if error.by_broker:
        what = (
            f"{path} line {line_number}, a {size:,}-byte record, was refused by the broker as "
            f"too large (its message.max.bytes is below MEMDEDUP_KAFKA__MAX_REQUEST_BYTES, "
            f"{limit:,})"
        )
    else:
        what = (
            f"{path} line {line_number} is a {size:,}-byte record, over the producer's limit "
            f"of {limit:,} bytes (MEMDEDUP_KAFKA__MAX_REQUEST_BYTES)"
        )
    after = (
        f" and {_lines(error.published_after)} after it"
        if error.published_after
        else ", nothing after it"
    )
    raise_ = "the broker's message.max.bytes" if error.by_broker else "the limit"
    again = (
        f"publish line {line_number} again"
        if error.published_after
        else f"publish the file from line {line_number} on"
    )
    return (
        f"{what}; published {_lines(error.published)} before it{after}. Split or shrink "
        f"that event (the consumer takes events up to {max_event_bytes:,} bytes, "
        f"MEMDEDUP_LIMITS__MAX_EVENT_BYTES) or raise {raise_}, then {again}"
    )
