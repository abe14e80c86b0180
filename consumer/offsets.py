"""Log-end offsets that hold on every broker.

Some Kafka-compatible brokers (the local Tansu build among them) answer
ListOffsets for the log end with the base offset of the last record batch plus
one, under-reporting when that batch holds several records. Reading the tail
gives the true end on every broker, at the cost of one short fetch.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition


async def exact_end_offsets(
    reader: AIOKafkaConsumer, partitions: Sequence[TopicPartition], *, poll_ms: int = 300
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
        while True:
            batch = (await reader.getmany(tp, timeout_ms=poll_ms)).get(tp, [])
            if not batch:
                break
            end = max(end, batch[-1].offset + 1)
        ends[tp] = end
    return ends
