"""Log-end offsets that hold on every broker.

Some Kafka-compatible brokers (the local Tansu build among them) answer
ListOffsets for the log end with the base offset of the last record batch plus
one, under-reporting when that batch holds several records. Reading the tail
gives the true end on every broker, at the cost of one short fetch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition


async def exact_end_offsets(
    reader: AIOKafkaConsumer,
    partitions: Sequence[TopicPartition],
    *,
    poll_ms: int = 300,
    first_fetch_timeout_s: float = 10.0,
) -> dict[TopicPartition, int]:
    """The offset after the last record of each partition. `reader` must not be
    subscribed to a group (it is assigned to the partitions here)."""
    reported = await reader.end_offsets(list(partitions))
    beginning = await reader.beginning_offsets(list(partitions))
    reader.assign(list(partitions))
    ends: dict[TopicPartition, int] = {}
    for tp in partitions:
        end = reported[tp]
        reader.seek(tp, max(beginning[tp], end - 1))
        # The record at end - 1 exists whenever end > beginning: wait for it (the
        # first fetch may take longer than a poll), then read until the tail is dry.
        expect_record = end > beginning[tp]
        deadline = time.monotonic() + first_fetch_timeout_s
        while True:
            batch = (await reader.getmany(tp, timeout_ms=poll_ms)).get(tp, [])
            if not batch:
                if expect_record and time.monotonic() < deadline:
                    continue
                break
            expect_record = False
            end = max(end, batch[-1].offset + 1)
        ends[tp] = end
    return ends
