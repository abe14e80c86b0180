"""Bad input never blocks a partition: records of any size or shape, on the real
local broker, are decided or dead-lettered exactly once and the partition moves on;
a partition that does not move makes the service unready."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaTimeoutError

from consumer.app.factory import create_app
from consumer.app.runtime import runtime_of
from tests.integration.harness import (
    StoreFactory,
    decisions_by_event,
    encode,
    event,
    make_settings,
    produce_records,
    read_outputs,
    wait_committed,
    wait_until,
)
from tests.integration.test_operations import get

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

MB = 1024 * 1024


def keyed(item: dict[str, Any]) -> tuple[bytes, bytes]:
    return f"{item['tenant_id']}/{item['namespace']}".encode(), encode(item)


def oversized(event_id: str, size: int) -> tuple[bytes, bytes]:
    """A well-formed event whose content makes it `size` bytes long."""
    return keyed(event(event_id, "User likes " + "x" * size))


# Each variant: the records, in order, and which of them are bad.
VARIANTS: dict[str, list[tuple[bytes | None, bytes]]] = {
    "unkeyed junk and a keyed 1.5 MB record": [
        keyed(event("g1", "User keeps bees on the roof")),
        (None, b"\x00 junk without a key"),
        oversized("big", int(1.5 * MB)),
        keyed(event("g2", "User's sister lives in Lisbon")),
    ],
    "a 1.5 MB record alone": [
        oversized("big", int(1.5 * MB)),
        keyed(event("g1", "User prefers aisle seats on long flights")),
    ],
    "a 10 MB record": [
        keyed(event("g1", "User drinks green tea in the morning")),
        oversized("big", 10 * MB),
        keyed(event("g2", "User owns a red bicycle")),
    ],
}


def assert_dead_letters_keep_the_source(dead: list[Any], records: list[Any], limit: int) -> None:
    """Each dead letter fits a record, names its source, and (when cut) carries
    the original's size and digest, its value being the original's first bytes."""
    for output in dead:
        offset = int(output.headers["source_offset"])
        original = records[offset][1]
        assert len(output.value) + sum(len(v) for v in output.headers.values()) <= limit
        if len(original) > limit:
            assert int(output.headers["original_bytes"]) == len(original)
            assert (
                output.headers["original_sha256"].decode() == hashlib.sha256(original).hexdigest()
            )
            assert original.startswith(output.value)
            assert len(output.value) > limit // 2
        else:
            assert output.value == original
            assert "original_bytes" not in output.headers


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_a_poison_batch_is_dead_lettered_once_and_the_partition_moves_on(
    local_broker: Any, real_embedder: Any, tmp_path: Path, variant: str
) -> None:
    records = VARIANTS[variant]
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    await produce_records(settings, records, max_request_size=16 * MB)
    stores = StoreFactory("edge", settings)
    app = create_app(settings, embedder=real_embedder, store=await stores.open())
    await app.start()
    try:
        assert await wait_committed(settings, len(records), timeout_s=60)
        outputs = await read_outputs(settings, at_least=len(records), settle_s=1.0)
        service = runtime_of(app).service
        assert service is not None
    finally:
        await app.stop()
        await stores.close()
    dead = [o for o in outputs if o.topic == settings.topics.dlq]
    bad = [i for i, (_, v) in enumerate(records) if len(v) > MB or not v.startswith(b"{")]
    assert sorted(int(o.headers["source_offset"]) for o in dead) == bad
    codes = {int(o.headers["source_offset"]): o.headers["error_code"].decode() for o in dead}
    assert {codes[i] for i in bad if len(records[i][1]) > MB} == {"too_large"}
    assert_dead_letters_keep_the_source(dead, records, settings.kafka.max_request_bytes)
    decided = decisions_by_event(outputs, settings)
    good = {json.loads(v)["event_id"] for i, (_, v) in enumerate(records) if i not in bad}
    assert set(decided) == good
    # Once each: no attempt published a second copy.
    assert all(len(d) == 1 for d in decided.values()), decided
    assert len(outputs) == len(records)
    assert service.retries == 0


async def test_a_dead_letter_whose_publish_fails_once_is_published_once(
    local_broker: Any, real_embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first send to the dead-letter topic fails as a broker timeout would:
    the batch is retried, the decisions acknowledged before it are not sent again."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, topics={"partitions": 1})
    records = [
        keyed(event("g1", "User keeps bees on the roof")),
        (None, b"not json"),
        keyed(event("g2", "User's manager is Priya")),
    ]
    send_batch = AIOKafkaProducer.send_batch
    failures: Counter[str] = Counter()

    async def fails_once_for_the_dlq(self: Any, batch: Any, topic: str, **kwargs: Any) -> Any:
        if topic == settings.topics.dlq and not failures[topic]:
            failures[topic] += 1
            raise KafkaTimeoutError("injected: no answer from the broker")
        return await send_batch(self, batch, topic, **kwargs)

    monkeypatch.setattr(AIOKafkaProducer, "send_batch", fails_once_for_the_dlq)
    await produce_records(settings, records)
    stores = StoreFactory("edge", settings)
    app = create_app(settings, embedder=real_embedder, store=await stores.open())
    await app.start()
    try:
        assert await wait_committed(settings, len(records), timeout_s=60)
        outputs = await read_outputs(settings, at_least=len(records), settle_s=1.0)
        service = runtime_of(app).service
        assert service is not None
    finally:
        await app.stop()
        await stores.close()
    assert failures[settings.topics.dlq] == 1
    assert service.retries >= 1
    assert Counter(o.topic for o in outputs) == {
        settings.topics.accepted: 2,
        settings.topics.dlq: 1,
    }
    assert len({o.value for o in outputs}) == 3


def gauge(metrics: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", metrics, re.MULTILINE)
    assert match, name
    return float(match.group(1))


async def test_readiness_fails_while_a_partition_is_stuck(
    local_broker: Any, real_embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the dead-letter topic cannot be written, a bad record holds its
    partition: /readyz fails on "progress" and the gauges show it; once the topic
    takes writes again the partition moves and the service is ready again."""
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        topics={"partitions": 1},
        http={"port": 0, "stuck_partition_after_s": 1.0},
    )
    broken = tmp_path / "dlq-broken"
    broken.touch()
    send_batch = AIOKafkaProducer.send_batch

    async def fails_while_broken(self: Any, batch: Any, topic: str, **kwargs: Any) -> Any:
        if topic == settings.topics.dlq and broken.exists():
            raise KafkaTimeoutError("injected: the dead-letter topic takes no writes")
        return await send_batch(self, batch, topic, **kwargs)

    monkeypatch.setattr(AIOKafkaProducer, "send_batch", fails_while_broken)
    stores = StoreFactory("edge", settings)
    app = create_app(settings, embedder=real_embedder, store=await stores.open())
    await app.start()
    try:
        port = runtime_of(app).health.port  # type: ignore[union-attr]
        assert (await asyncio.to_thread(get, port, "/readyz"))[0] == 200
        records = [keyed(event("g1", "User owns a red bicycle")), (None, b"not json")]
        await produce_records(settings, records)

        async def unready() -> bool:
            return (await asyncio.to_thread(get, port, "/readyz"))[0] == 503

        assert await wait_until(unready, timeout_s=30)
        status, body = await asyncio.to_thread(get, port, "/readyz")
        assert status == 503
        assert json.loads(body)["failing"] == ["progress"], body
        metrics = (await asyncio.to_thread(get, port, "/metrics"))[1]
        assert gauge(metrics, "memdedup_stuck_partitions") == 1
        assert gauge(metrics, "memdedup_oldest_waiting_seconds") > 1.0
        assert 'memdedup_consumer_lag{partition="0"}' in metrics

        broken.unlink()
        assert await wait_committed(settings, len(records), timeout_s=30)

        async def ready() -> bool:
            return (await asyncio.to_thread(get, port, "/readyz"))[0] == 200

        assert await wait_until(ready, timeout_s=30)
        metrics = (await asyncio.to_thread(get, port, "/metrics"))[1]
        assert gauge(metrics, "memdedup_stuck_partitions") == 0
        outputs = await read_outputs(settings, at_least=len(records), settle_s=1.0)
    finally:
        await app.stop()
        await stores.close()
    assert Counter(o.topic for o in outputs) == {
        settings.topics.accepted: 1,
        settings.topics.dlq: 1,
    }
