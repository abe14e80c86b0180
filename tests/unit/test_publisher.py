"""BrokerPublisher: a wait for acknowledgements that outlasts its bound fails."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from consumer.app import BrokerPublisher
from consumer.errors import PublishFailed, TransientError
from consumer.records import OutgoingRecord


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

    from consumer.app import correlation_ids

    first, second = correlation_ids(), correlation_ids()
    ids = [next(first) for _ in range(1_000)] + [next(second) for _ in range(1_000)]
    assert len(set(ids)) == len(ids)
    assert all(str(uuid.UUID(i)) == i and uuid.UUID(i).version == 4 for i in ids)
