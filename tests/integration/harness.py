"""Running the real service against the local broker inside a test."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from consumer.app.factory import create_app
from consumer.cli.produce import key_for
from consumer.kafka.topics import ensure_topics
from consumer.ports import Embedder, MemoryStore
from consumer.settings import Settings, load_settings
from consumer.state.changelog import Changelog
from consumer.state.edge import EdgeMemoryStore
from consumer.state.server import QdrantServerStore


def make_settings(bootstrap: str, data_dir: Path, **overrides: Any) -> Settings:
    """Unique topics and group per test, short timeouts for the local broker."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    values: dict[str, Any] = {
        "kafka": {
            "bootstrap_servers": bootstrap,
            "group_id": f"{prefix}-group",
            "session_timeout_ms": 1500,
            "heartbeat_interval_ms": 500,
            "batch_timeout_ms": 20,
        },
        "topics": {
            "input": f"{prefix}.memory.extracted",
            "accepted": f"{prefix}.memory.accepted",
            "merged": f"{prefix}.memory.merged",
            "skipped": f"{prefix}.memory.skipped",
            "dlq": f"{prefix}.memory.dlq",
            "reversed": f"{prefix}.memory.reversed",
            "command_results": f"{prefix}.command-results",
            "changelog": f"{prefix}.memory.changelog",
            "partitions": 3,
        },
        "qdrant": {"path": str(data_dir)},
        "retry": {"initial_backoff_s": 0.05, "max_backoff_s": 0.5, "max_elapsed_s": 2.0},
        "http": {"port": 0},
    }
    for section, fields in overrides.items():
        values.setdefault(section, {}).update(fields)
    return load_settings(**values)


class StoreFactory:
    """Hands out the store for each consumer run. An embedded store is reopened from
    its directory each time (as a restarted process would); local mode keeps one
    in-memory client, standing in for a server that outlives consumers."""

    def __init__(self, kind: str, settings: Settings) -> None:
        self.kind = kind
        self._settings = settings
        self._current: MemoryStore | None = None

    async def open(self) -> MemoryStore:
        if self.kind == "edge":
            if self._current is not None:
                await self._current.close()
            self._current = EdgeMemoryStore(
                root=self._settings.qdrant.path,
                collection=self._settings.qdrant.collection,
                topic=self._settings.topics.input,
                decision_times=self._settings.retention.decisions_hours is not None,
            )
        elif self._current is None:
            self._current = QdrantServerStore.connect(
                collection=self._settings.qdrant.collection, location=":memory:"
            )
        return self._current

    async def count(self) -> int:
        store = await self.open()
        await store.start(384)
        total = 0
        for partition in range(self._settings.topics.partitions):
            total += await store.count_memories(partition=partition)
            if self.kind != "edge":
                return total
        return total

    async def close(self) -> None:
        if self._current is not None:
            await self._current.close()
            self._current = None


@asynccontextmanager
async def running_consumer(
    settings: Settings, embedder: Embedder, store: MemoryStore
) -> AsyncIterator[None]:
    app = create_app(settings, embedder=embedder, store=store)
    await app.start()
    try:
        yield
    finally:
        await app.stop()
        shards = store.shards()
        if shards is not None:
            await shards.release_partitions(range(settings.topics.partitions))


class NoPublisher:
    async def publish_all(self, records: Any) -> list[int]:
        raise AssertionError("a restore publishes nothing")


@asynccontextmanager
async def restored_from_changelog(
    settings: Settings, root: Path, dimension: int = 384
) -> AsyncIterator[EdgeMemoryStore]:
    """A fresh embedded store under `root`, every partition restored from the
    changelog (as a consumer new to the partitions would)."""
    fresh = EdgeMemoryStore(
        root=root, collection=settings.qdrant.collection, topic=settings.topics.input
    )
    await fresh.start(dimension)
    changelog = Changelog(
        topic=settings.topics.changelog,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        publisher=NoPublisher(),
    )
    try:
        for partition in range(settings.topics.partitions):
            await changelog.restore(partition, fresh)
        yield fresh
    finally:
        await changelog.close()
        await fresh.close()


def event(
    event_id: str, content: str, tenant: str = "acme", namespace: str = "prefs", **extra: Any
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "event_id": event_id,
        "tenant_id": tenant,
        "namespace": namespace,
        "content": content,
        **extra,
    }


def encode(item: dict[str, Any] | bytes) -> bytes:
    return item if isinstance(item, bytes) else json.dumps(item).encode()


async def produce(
    settings: Settings, items: Sequence[dict[str, Any] | bytes]
) -> list[tuple[int, int]]:
    """Publish in order; returns (partition, offset) of each record."""
    await ensure_topics(settings)
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers, acks="all")
    await producer.start()
    try:
        futures = []
        for item in items:
            raw = encode(item)
            futures.append(await producer.send(settings.topics.input, value=raw, key=key_for(raw)))
        metadata = [await f for f in futures]
        return [(m.partition, m.offset) for m in metadata]
    finally:
        await producer.stop()


async def produce_records(
    settings: Settings,
    records: Sequence[tuple[bytes | None, bytes]],
    *,
    max_request_size: int = 1024 * 1024,
) -> list[tuple[int, int]]:
    """Publish (key, value) pairs as they are, in order, to partition 0; returns
    each record's (partition, offset). For records the service's own producer
    would never write: no key, any size."""
    await ensure_topics(settings)
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        acks="all",
        max_request_size=max_request_size,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(settings.topics.input, value=value, key=key, partition=0)
            for key, value in records
        ]
        metadata = [await f for f in futures]
        return [(m.partition, m.offset) for m in metadata]
    finally:
        await producer.stop()


@dataclass(frozen=True)
class Output:
    topic: str
    key: bytes | None
    value: bytes
    headers: dict[str, bytes]

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.value)  # type: ignore[no-any-return]


async def read_outputs(
    settings: Settings, *, at_least: int, timeout_s: float = 60.0, settle_s: float = 0.0
) -> list[Output]:
    """Everything on the decision and DLQ topics, from the beginning: at least
    `at_least` records (waiting up to `timeout_s` for them), then on to the end of
    every partition as it stands (a count alone stops short when some events'
    decisions were emitted more than once), then whatever comes within `settle_s`."""
    topics = settings.topics
    names = [topics.accepted, topics.merged, topics.skipped, topics.dlq]
    consumer = AIOKafkaConsumer(
        *names,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    outputs: list[Output] = []
    read_to: dict[TopicPartition, int] = {}

    async def read_some(timeout_ms: int) -> None:
        for tp, records in (await consumer.getmany(timeout_ms=timeout_ms)).items():
            outputs.extend(Output(r.topic, r.key, r.value, dict(r.headers or ())) for r in records)
            if records:
                read_to[tp] = records[-1].offset + 1

    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(outputs) < at_least:
            await read_some(300)
        # Some brokers report the base offset of the last batch (plus one) as the
        # end: reading that far delivers the whole batch all the same.
        ends = await consumer.end_offsets(list(consumer.assignment()))
        while time.monotonic() < deadline and any(
            read_to.get(tp, 0) < end for tp, end in ends.items()
        ):
            await read_some(300)
        settle_until = time.monotonic() + settle_s
        while time.monotonic() < settle_until:
            await read_some(200)
    finally:
        await consumer.stop()
    return outputs


async def decide_after_stored(
    settings: Settings,
    embedder: Any,
    stored: Sequence[dict[str, Any]],
    follow_up: Sequence[dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Run a consumer on an edge store: `stored` decided first, then `follow_up`;
    every event's decisions."""
    async with running_consumer(settings, embedder, await StoreFactory("edge", settings).open()):
        await produce(settings, stored)
        await read_outputs(settings, at_least=len(stored))
        await produce(settings, follow_up)
        outputs = await read_outputs(settings, at_least=len(stored) + len(follow_up))
    return decisions_by_event(outputs, settings)


def decisions_by_event(
    outputs: Sequence[Output], settings: Settings
) -> dict[str, list[dict[str, Any]]]:
    """Each event's decisions in input order (decision topics are read one after
    another, so their interleaving says nothing about which came first)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for output in outputs:
        if output.topic != settings.topics.dlq:
            found.setdefault(output.body["event_id"], []).append(output.body)
    for decisions in found.values():
        decisions.sort(key=lambda body: (body["record"]["partition"], body["record"]["offset"]))
    return found


async def committed_offsets(settings: Settings) -> dict[int, int | None]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=settings.kafka.group_id,
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        return {
            p: await consumer.committed(TopicPartition(settings.topics.input, p))
            for p in range(settings.topics.partitions)
        }
    finally:
        await consumer.stop()


async def wait_until(predicate: Any, timeout_s: float, interval_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(interval_s)
    return False


async def wait_committed(settings: Settings, total: int, timeout_s: float = 15) -> bool:
    """Wait until the group has committed `total` records over all partitions."""

    async def reached() -> bool:
        offsets = await committed_offsets(settings)
        return sum(o or 0 for o in offsets.values()) == total

    return await wait_until(reached, timeout_s)


def only(decisions: dict[str, list[dict[str, Any]]], event_id: str) -> dict[str, Any]:
    """The single decision emitted for `event_id`."""
    copies = decisions[event_id]
    assert len(copies) == 1, f"{event_id} was decided {len(copies)} times"
    return copies[0]


def assert_folded(
    decisions: dict[str, list[dict[str, Any]]],
    event_id: str,
    *,
    into: str,
    outcomes: tuple[str, ...] = ("merged",),
) -> None:
    """`event_id` was folded into the memory `into` made (merged by default)."""
    body = only(decisions, event_id)
    assert body["decision"] in outcomes, (event_id, body["reason"])
    assert body["memory_id"] == only(decisions, into)["memory_id"]


def assert_kept_apart(
    decisions: dict[str, list[dict[str, Any]]], event_id: str, *, from_: str, guard: str
) -> dict[str, Any]:
    """`event_id` was accepted as a memory of its own, kept apart from the memory
    `from_` made by `guard`'s veto, which downstream learns as related; its decision."""
    body = only(decisions, event_id)
    assert body["decision"] == "accepted", (event_id, body["reason"])
    assert body["memory_id"] != only(decisions, from_)["memory_id"]
    assert body["guard"]["name"] == guard
    assert body["related"][0]["memory_id"] == only(decisions, from_)["memory_id"]
    return body


# One fact per tier and scope: stored first, then repeated, paraphrased, varied.
TIERS_BASE = [
    event("e1", "User prefers Python for backend work", importance=0.4, topics=["code"]),
    event("e2", "User drinks coffee every morning"),
    event("e3", "User is allergic to peanuts", namespace="bio", importance=0.9),
]
TIERS_FOLLOW_UP = [
    event("e4", "  user PREFERS python   for backend work. "),
    event("e5", "User prefers Python for backend development work"),
    event(
        "e6", "The user has a peanut allergy", namespace="bio", importance=0.5, topics=["health"]
    ),
    event("e7", "User enjoys green tea in the evening"),
    event("e8", "User prefers Python for backend work", tenant="globex"),
    event("e9", "User prefers Python for backend work", namespace="projects"),
]
