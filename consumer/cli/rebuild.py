"""`memdedup rebuild`: reprocess the input topic into a fresh collection with the
current settings (new thresholds, another model) without touching the live one,
then compare with the live decisions.

Nothing is published: decisions are collected in memory and compared with what
the live decision topics hold, so a team can see what a change would do before
switching to it.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TextIO

from aiokafka import AIOKafkaConsumer, TopicPartition

from consumer.app.factory import build_store, threshold_policy
from consumer.domain.alignment import load_aligner
from consumer.domain.dedup import DedupEngine
from consumer.domain.recent import RecentCache
from consumer.domain.verifier import build_verifier
from consumer.embedding.cross_encoder import load_cross_encoder
from consumer.embedding.embedders import load_embedder
from consumer.errors import PermanentError
from consumer.kafka.offsets import exact_end_offsets
from consumer.kafka.records import InputRecord, OutgoingRecord
from consumer.kafka.security import aiokafka_kwargs
from consumer.service.command_processor import CommandProcessor
from consumer.service.processor import BatchProcessor
from consumer.settings import Settings
from consumer.state.durable import DurableStore

BATCH = 256


class RebuildRefused(PermanentError):
    """The rebuild would touch live data or cannot start; the message says why."""


class CollectingPublisher:
    """Keeps decision records instead of publishing them."""

    def __init__(self, decision_topics: set[str]) -> None:
        self._decision_topics = decision_topics
        self.decisions: dict[str, str] = {}
        self.dead_letters = 0
        self._offset = 0

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]:
        for record in records:
            if record.topic in self._decision_topics:
                body = json.loads(record.value)
                self.decisions.setdefault(body["event_id"], body["decision"])
            elif record.headers.get("error_code"):
                self.dead_letters += 1
            # Re-routed records were re-routed live too: their copies are in the topic.
        self._offset += len(records)
        return list(range(self._offset - len(records), self._offset))


@dataclass
class RebuildReport:
    records: int = 0
    rebuilt: dict[str, str] = field(default_factory=dict)
    live: dict[str, str] = field(default_factory=dict)
    dead_letters: int = 0
    seconds: float = 0.0

    @property
    def transitions(self) -> Counter[tuple[str, str]]:
        common = self.rebuilt.keys() & self.live.keys()
        return Counter((self.live[e], self.rebuilt[e]) for e in common)

    def render(self) -> str:
        transitions = self.transitions
        changed = sum(n for (old, new), n in transitions.items() if old != new)
        lines = [
            f"reprocessed {self.records} records in {self.seconds:.1f}s: "
            f"{len(self.rebuilt)} decisions, {self.dead_letters} dead letters",
            f"compared with {len(self.live)} live decisions: {changed} changed, "
            f"{sum(transitions.values()) - changed} unchanged",
        ]
        for (old, new), count in sorted(transitions.items()):
            if old != new:
                lines.append(f"  {old} -> {new}: {count}")
        only_rebuilt = len(self.rebuilt.keys() - self.live.keys())
        only_live = len(self.live.keys() - self.rebuilt.keys())
        if only_rebuilt or only_live:
            lines.append(
                f"  only in the rebuild: {only_rebuilt}; only live (before --from-datetime "
                f"or not yet decided): {only_live}"
            )
        return "\n".join(lines)


def _progress(done: int, total: int, started: float, out: TextIO) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    rate = done / max(time.monotonic() - started, 1e-9)
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} ({rate:.0f}/s)")
    out.flush()


async def read_live_decisions(settings: Settings) -> dict[str, str]:
    topics = settings.topics
    reader = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        **aiokafka_kwargs(settings.security),
    )
    await reader.start()
    live: dict[str, str] = {}
    try:
        partitions = [
            TopicPartition(topic, p)
            for topic in (topics.accepted, topics.merged, topics.skipped)
            for p in sorted(reader.partitions_for_topic(topic) or await _partitions(reader, topic))
        ]
        ends = await exact_end_offsets(reader, partitions)
        await reader.seek_to_beginning(*partitions)
        remaining = {tp for tp in partitions if ends[tp] > 0}
        while remaining:
            batches = await reader.getmany(*remaining, timeout_ms=1_000)
            if not batches:
                break
            for tp, records in batches.items():
                for record in records:
                    body = json.loads(record.value)
                    live.setdefault(body["event_id"], body["decision"])
                if records and records[-1].offset >= ends[tp] - 1:
                    remaining.discard(tp)
    finally:
        await reader.stop()
    return live


async def _partitions(reader: AIOKafkaConsumer, topic: str) -> set[int]:
    await reader.topics()
    return reader.partitions_for_topic(topic) or set()


async def rebuild(
    live_settings: Settings,
    *,
    target_collection: str,
    from_datetime: datetime | None = None,
    progress: TextIO | None = sys.stderr,
) -> RebuildReport:
    if target_collection == live_settings.qdrant.collection:
        raise RebuildRefused(
            f"--target-collection {target_collection!r} is the live collection; pick a new name"
        )
    settings = live_settings.model_copy(
        update={"qdrant": live_settings.qdrant.model_copy(update={"collection": target_collection})}
    )
    embedder = await load_embedder(settings.embedding, data_dir=settings.qdrant.path)
    store = build_store(
        settings.qdrant,
        input_topic=settings.topics.input,
        decision_retention=settings.retention.decisions_hours is not None,
    )
    await store.start(embedder.dimension)
    report = RebuildReport()
    started = time.monotonic()
    reader = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        **aiokafka_kwargs(settings.security),
    )
    await reader.start()
    try:
        if await store.count_memories():
            raise RebuildRefused(
                f"collection {target_collection!r} already holds memories; rebuild into a new one"
            )
        topic = settings.topics.input
        numbers = reader.partitions_for_topic(topic) or await _partitions(reader, topic)
        if not numbers:
            raise RebuildRefused(f"input topic {topic!r} does not exist")
        partitions = [TopicPartition(topic, p) for p in sorted(numbers)]
        ends = await exact_end_offsets(reader, partitions)
        starts = dict(await reader.beginning_offsets(partitions))
        if from_datetime is not None:
            found = await reader.offsets_for_times(
                {tp: int(from_datetime.timestamp() * 1000) for tp in partitions}
            )
            starts = {tp: found[tp].offset if found.get(tp) else ends[tp] for tp in partitions}
        total = sum(max(0, ends[tp] - starts[tp]) for tp in partitions)
        publisher = CollectingPublisher(
            {settings.topics.accepted, settings.topics.merged, settings.topics.skipped}
        )
        aligner = await load_aligner(settings.dedup.alignment_enabled)
        engine = DedupEngine(
            store=store,
            embedder=embedder,
            policy=threshold_policy(settings),
            recent=RecentCache(
                ttl_s=settings.dedup.recent_ttl_s, max_entries=settings.dedup.recent_max_entries
            ),
            search_limit=settings.dedup.search_limit,
            guards=settings.dedup.guards_enabled,
            # The same checks as the live consumer, so a rebuild decides alike.
            verifier=build_verifier(settings.dedup, aligner=aligner),
            aligner=aligner,
            cross_encoder=await load_cross_encoder(settings.dedup.cross_encoder),
        )
        state = DurableStore(store)
        processor = BatchProcessor(
            engine=engine,
            state=state,
            commands=CommandProcessor(
                engine=engine, state=state, topics=settings.topics, model_id=embedder.model_id
            ),
            publisher=publisher,
            topics=settings.topics,
            model_id=embedder.model_id,
            max_event_bytes=settings.limits.max_event_bytes,
        )
        for tp in partitions:
            if starts[tp] >= ends[tp]:
                continue
            reader.assign([tp])
            reader.seek(tp, starts[tp])
            position = starts[tp]
            while position < ends[tp]:
                batches = await reader.getmany(tp, timeout_ms=1_000, max_records=BATCH)
                records = [
                    InputRecord.from_consumer_record(r)
                    for r in batches.get(tp, [])
                    if r.offset < ends[tp]
                ]
                if not records:
                    continue
                await processor.process(records, partition_count=len(partitions))
                position = records[-1].offset + 1
                report.records += len(records)
                if progress is not None:
                    _progress(report.records, total, started, progress)
        if progress is not None:
            progress.write("\n")
        report.rebuilt = publisher.decisions
        report.dead_letters = publisher.dead_letters
    finally:
        await reader.stop()
        await store.close()
        await embedder.close()
    report.live = await read_live_decisions(live_settings)
    report.seconds = time.monotonic() - started
    return report
