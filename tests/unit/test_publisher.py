"""BrokerPublisher: a wait for acknowledgements that outlasts its bound fails; a
retry publishes only what was not acknowledged; refusals are sorted into
transient and permanent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.errors import (
    InvalidTopicError,
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
)

from consumer.errors import PermanentError, PublishFailed, PublishRejected, TransientError
from consumer.kafka.publish_ledger import PublishLedger, ledger_keys
from consumer.kafka.publisher import BrokerPublisher, record_size
from consumer.kafka.records import OutgoingRecord


class HangingBroker:
    """Publishes through its own path (a middleware is set), and the broker never
    acknowledges: the futures it returns stay pending."""

    middlewares = (object(),)

    def __init__(self, acknowledge: bool = False) -> None:
        self.acknowledge = acknowledge
        self.published: list[Any] = []

    async def publish(self, value: bytes, topic: str, **kwargs: Any) -> asyncio.Future[Any]:
        self.published.append((topic, value))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.acknowledge:
            future.set_result(type("Metadata", (), {"offset": len(self.published) - 1})())
        return future


RECORDS = [OutgoingRecord("t", b"k", b"v1"), OutgoingRecord("t", b"k", b"v2")]


async def test_a_hanging_broker_fails_the_publish_as_transient() -> None:
    broker = HangingBroker()
    publisher = BrokerPublisher(broker, ack_timeout_s=0.05)  # type: ignore[arg-type]
    with pytest.raises(
        PublishFailed, match=r"did not acknowledge 2 records within 0\.05 s"
    ) as info:
        await publisher.publish_all(RECORDS)
    assert isinstance(info.value, TransientError)  # retried, then rewound
    assert [value for _, value in broker.published] == [b"v1", b"v2"]


async def test_acknowledged_records_return_their_offsets() -> None:
    broker = HangingBroker(acknowledge=True)
    publisher = BrokerPublisher(broker, ack_timeout_s=5)  # type: ignore[arg-type]
    assert await publisher.publish_all(RECORDS) == [0, 1]


def test_correlation_ids_are_uuid_shaped_and_unique() -> None:
    import uuid

    from consumer.kafka.publisher import correlation_ids

    first, second = correlation_ids(), correlation_ids()
    ids = [next(first) for _ in range(1_000)] + [next(second) for _ in range(1_000)]
    assert len(set(ids)) == len(ids)
    assert all(str(uuid.UUID(i)) == i and uuid.UUID(i).version == 4 for i in ids)


class PartlyFailingBroker(HangingBroker):
    """Acknowledges every record but those whose value is in `refuse`, which
    fail with the given error (once each when `once`)."""

    def __init__(self, refuse: set[bytes], error: BaseException, once: bool = False) -> None:
        super().__init__(acknowledge=True)
        self.refuse = refuse
        self.error = error
        self.once = once

    async def publish(self, value: bytes, topic: str, **kwargs: Any) -> asyncio.Future[Any]:
        if value not in self.refuse:
            return await super().publish(value, topic, **kwargs)
        self.published.append((topic, value))
        if self.once:
            self.refuse = self.refuse - {value}
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_exception(self.error)
        return future


def answers(*values: bytes) -> list[OutgoingRecord]:
    """Records answering input records 0, 1, ... of partition 3."""
    return [
        OutgoingRecord("out", b"k", value, source=(3, offset))
        for offset, value in enumerate(values)
    ]


async def test_a_retry_publishes_only_what_the_broker_did_not_acknowledge() -> None:
    broker = PartlyFailingBroker({b"b"}, KafkaTimeoutError(), once=True)
    publisher = BrokerPublisher(broker, ack_timeout_s=5)  # type: ignore[arg-type]
    records = answers(b"a", b"b", b"c")
    with pytest.raises(PublishFailed):
        await publisher.publish_all(records)
    offsets = await publisher.publish_all(records)
    assert [value for _, value in broker.published] == [b"a", b"b", b"c", b"b"]
    # The first attempt's offsets stand for what it stored.
    assert offsets == [0, 3, 2]
    # Committed: forgotten, so a replay from an earlier offset publishes again.
    publisher.ledger.committed(3, next_offset=3)
    assert len(publisher.ledger) == 0


async def test_records_tied_to_no_input_record_are_published_every_time() -> None:
    broker = HangingBroker(acknowledge=True)
    publisher = BrokerPublisher(broker, ack_timeout_s=5)  # type: ignore[arg-type]
    await publisher.publish_all(RECORDS)
    await publisher.publish_all(RECORDS)
    assert len(broker.published) == 4


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (MessageSizeTooLargeError(), PublishRejected),
        (InvalidTopicError(), PublishRejected),
        (KafkaTimeoutError(), PublishFailed),
        (KafkaConnectionError(), PublishFailed),
    ],
)
async def test_a_refusal_for_what_the_record_is_is_permanent(
    error: BaseException, kind: type[Exception]
) -> None:
    broker = PartlyFailingBroker({b"b"}, error)
    publisher = BrokerPublisher(broker, ack_timeout_s=5)  # type: ignore[arg-type]
    with pytest.raises(kind, match=type(error).__name__) as info:
        await publisher.publish_all(answers(b"a", b"b"))
    assert isinstance(info.value, PermanentError) == (kind is PublishRejected)
    assert isinstance(info.value, TransientError) == (kind is PublishFailed)


async def test_a_record_over_the_request_limit_is_refused_before_anything_is_sent() -> None:
    broker = HangingBroker(acknowledge=True)
    publisher = BrokerPublisher(
        broker,  # type: ignore[arg-type]
        ack_timeout_s=5,
        max_request_bytes=64 * 1024,
    )
    records = [*answers(b"small"), OutgoingRecord("dlq", None, b"x" * 64 * 1024)]
    with pytest.raises(PublishRejected, match="exceeds max_request_bytes"):
        await publisher.publish_all(records)
    assert broker.published == []
    assert record_size(records[1]) > 64 * 1024


def test_ledger_keys_count_records_per_input_record_and_topic() -> None:
    records = [
        OutgoingRecord("a", None, b"1", source=(0, 5)),
        OutgoingRecord("a", None, b"2", source=(0, 5)),
        OutgoingRecord("b", None, b"3", source=(0, 5)),
        OutgoingRecord("a", None, b"4", source=(1, 5)),
        OutgoingRecord("a", None, b"5"),
    ]
    assert ledger_keys(records) == [
        (0, 5, "a", 0),
        (0, 5, "a", 1),
        (0, 5, "b", 0),
        (1, 5, "a", 0),
        None,
    ]


def test_a_ledger_forgets_given_up_partitions_and_committed_offsets() -> None:
    ledger = PublishLedger()
    for partition, offset in [(0, 1), (0, 2), (1, 1)]:
        ledger.acknowledged((partition, offset, "t", 0), offset * 10)
    ledger.committed(0, next_offset=2)
    assert ledger.offset_of((0, 1, "t", 0)) is None
    assert ledger.offset_of((0, 2, "t", 0)) == 20
    ledger.forget([0])
    assert ledger.offset_of((0, 2, "t", 0)) is None
    assert ledger.offset_of((1, 1, "t", 0)) == 10
    assert len(ledger) == 1
