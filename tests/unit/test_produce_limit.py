"""`memdedup produce`: a line too large for a produce request is found before
anything is sent, and the message says which line, how big, and what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError

from consumer.cli.produce import (
    LineTooLarge,
    OversizedLine,
    first_oversized,
    key_for,
    read_numbered_lines,
    record_size,
    too_large_message,
)

LIMIT = 64 * 1024


def line(event_id: str, content: str = "User prefers tea") -> bytes:
    document = {"event_id": event_id, "tenant_id": "acme", "namespace": "prefs"}
    return json.dumps({**document, "content": content}).encode()


def test_the_first_line_over_the_limit_is_found_before_sending() -> None:
    big = line("big", "x" * LIMIT)
    lines = [line("a"), line("b"), big, line("c"), line("huge", "y" * 2 * LIMIT)]
    found = first_oversized(lines, limit=LIMIT)
    assert found == OversizedLine(index=2, size=record_size(big), limit=LIMIT)
    assert found.size > LIMIT
    assert first_oversized(lines[:2], limit=LIMIT) is None
    assert first_oversized([], limit=LIMIT) is None


async def test_the_check_agrees_with_the_producer_at_the_limit() -> None:
    # The largest line that fits, and one byte more: the check passes exactly the
    # lines aiokafka's own check (at send) lets through.
    fill = LIMIT
    while record_size(line("e", "z" * fill)) > LIMIT:
        fill -= 1
    fits, over = line("e", "z" * fill), line("e", "z" * (fill + 1))
    assert first_oversized([fits], limit=LIMIT) is None
    assert first_oversized([over], limit=LIMIT) == OversizedLine(0, record_size(over), LIMIT)
    producer = AIOKafkaProducer(max_request_size=LIMIT)
    try:
        producer._serialize(key_for(fits), fits, [])
        with pytest.raises(MessageSizeTooLargeError):
            producer._serialize(key_for(over), over, [])
    finally:
        await producer.stop()


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join([line("a"), b"", b"   ", line("b"), line("c")]) + b"\n")
    assert [number for number, _ in read_numbered_lines(path)] == [1, 4, 5]


def test_the_message_names_line_size_limit_progress_and_the_fix() -> None:
    error = LineTooLarge(OversizedLine(index=2, size=1_200_345, limit=1_048_576), published=2)
    message = too_large_message(
        error, path=Path("events.jsonl"), line_number=3, max_event_bytes=65_536
    )
    assert "\n" not in message
    for expected in (
        "events.jsonl line 3",
        "1,200,345-byte",
        "1,048,576 bytes",
        "MEMDEDUP_KAFKA__MAX_REQUEST_BYTES",
        "published 2 lines before it, nothing after it",
        "Split or shrink",
        "from line 3 on",
    ):
        assert expected in message, message
    one = too_large_message(
        LineTooLarge(OversizedLine(1, 2_000_000, 1_048_576), published=1),
        path=Path("f"),
        line_number=2,
        max_event_bytes=65_536,
    )
    assert "published 1 line before it" in one


def test_a_refusal_by_the_broker_says_so() -> None:
    error = LineTooLarge(
        OversizedLine(index=1, size=900_000, limit=1_048_576),
        published=1,
        published_after=3,
        by_broker=True,
    )
    message = too_large_message(error, path=Path("f"), line_number=2, max_event_bytes=65_536)
    assert "refused by the broker" in message
    assert "and 3 lines after it" in message
    assert "message.max.bytes" in message
    assert "over the producer's limit" not in message


@pytest.mark.parametrize("count", [0, 1])
def test_nothing_is_oversized_below_the_limit(count: int) -> None:
    assert first_oversized([line(str(i)) for i in range(count)], limit=LIMIT) is None
