"""`memdedup demo`: the whole service on embedded defaults, in one command.

Starts a local broker, creates the topics, runs the consumer against an embedded
store in a temporary directory, publishes the shipped sample events, prints each
decision and dead letter, and stops everything.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from consumer.app.factory import create_app
from consumer.cli.auditlog import send_review
from consumer.cli.compact import render_outcome, run_compaction
from consumer.cli.produce import produce_lines, read_lines
from consumer.cli.tables import is_terminal
from consumer.cli.tables import render_table as render_table_lines
from consumer.kafka.localbroker import LocalBroker
from consumer.kafka.security import aiokafka_kwargs
from consumer.kafka.topic_reader import read_all
from consumer.kafka.topics import ensure_topics
from consumer.settings import Settings, load_settings
from schemas import DeadLetterHeaders, ReviewAction


def sample_waves() -> list[Path]:
    """Two waves: the second is published once the first is decided, so its
    repeats meet stored memories (exact, semantic) rather than in-flight ones."""
    data = Path(__file__).resolve().parents[1] / "data"
    return [data / "demo_wave1.jsonl", data / "demo_wave2.jsonl"]


@dataclass(frozen=True, slots=True)
class OutputRow:
    """One record the service published, flattened for display and checks."""

    topic: str
    offset_in: int
    partition_in: int
    event_id: str
    scope: str
    outcome: str
    detail: str
    memory_id: str
    content: str
    decision_id: str = ""


def _row(
    topic: str, value: bytes, headers: list[tuple[str, bytes]], settings: Settings
) -> OutputRow:
    if topic == settings.topics.dlq:
        dead = DeadLetterHeaders.from_kafka(headers)
        event_id = dict(headers).get("event_id", b"").decode()
        return OutputRow(
            topic,
            dead.source_offset,
            dead.source_partition,
            event_id or "-",
            "-",
            f"dlq:{dead.error_code.value}",
            dead.error_detail,
            "-",
            "",
        )
    event = json.loads(value)
    similarity = event["similarity"]
    detail = event["reason"] + (f" sim={similarity:.3f}" if similarity is not None else "")
    return OutputRow(
        topic,
        event["record"]["offset"],
        event["record"]["partition"],
        event["event_id"],
        f"{event['tenant_id']}/{event['namespace']}",
        event["decision"],
        detail,
        event["memory_id"][:8],
        event["memory"]["content"],
        event["decision_id"],
    )


async def collect_outputs(
    settings: Settings, *, expected: int, timeout_s: float
) -> list[OutputRow]:
    """Read decision and DLQ topics from the beginning until `expected` records."""
    topics = settings.topics
    outputs = [topics.accepted, topics.merged, topics.skipped, topics.dlq]
    consumer = AIOKafkaConsumer(
        *outputs,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **aiokafka_kwargs(settings.security),
    )
    await consumer.start()
    rows: list[OutputRow] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(rows) < expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                rows.extend(
                    _row(r.topic, r.value, list(r.headers or ()), settings) for r in records
                )
    finally:
        await consumer.stop()
    return rows


def mark_copies(
    rows: list[OutputRow], inputs: dict[str, list[tuple[int, int]]] | None = None
) -> list[tuple[OutputRow, bool]]:
    """Each row, and whether it re-emits a decision already shown: a redelivered
    event gets its decision byte for byte, so the record names the original's
    input position; `inputs` (event id -> its input (partition, offset)s) gives
    the copy's own position instead."""
    shown: dict[tuple[str, str], int] = {}
    used = {(r.partition_in, r.offset_in) for r in rows}
    marked: list[tuple[OutputRow, bool]] = []
    for row in rows:
        if row.outcome.startswith("dlq:"):
            marked.append((row, False))
            continue
        key = (row.event_id, row.outcome)
        copies = shown.get(key, 0)
        shown[key] = copies + 1
        if not copies:
            marked.append((row, False))
            continue
        spare = [p for p in (inputs or {}).get(row.event_id, []) if p not in used]
        if spare:
            used.add(spare[0])
            row = replace(row, partition_in=spare[0][0], offset_in=spare[0][1])
        marked.append((row, True))
    return marked


def render_table(marked: list[tuple[OutputRow, bool]], *, color: bool = False) -> str:
    header = ("input", "event_id", "scope", "outcome", "why", "memory", "stored memory text")
    body = [
        (
            f"p{r.partition_in}@{r.offset_in}",
            r.event_id,
            r.scope,
            r.outcome + (" (re-emitted)" if copy else ""),
            r.detail if len(r.detail) <= 48 else r.detail[:45] + "...",
            r.memory_id,
            r.content if len(r.content) <= 44 else r.content[:41] + "...",
        )
        for r, copy in sorted(marked, key=lambda m: (m[0].partition_in, m[0].offset_in))
    ]
    return render_table_lines(header, body, rule=True, color=color)


def summary(marked: list[tuple[OutputRow, bool]]) -> str:
    """Counts per outcome; re-emitted copies apart (they are not new memories)."""
    counts: dict[str, int] = {}
    for row, copy in marked:
        name = "re-emitted" if copy else row.outcome
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name}: {n}" for name, n in sorted(counts.items()))


async def input_positions(settings: Settings) -> dict[str, list[tuple[int, int]]]:
    """Every event id on the input topic, with the (partition, offset)s it was
    published at (the demo's topic holds a few dozen records)."""
    found: dict[str, list[tuple[int, int]]] = {}
    async for record in read_all(settings, [settings.topics.input]):
        try:
            event_id = json.loads(record.value or b"").get("event_id")
        except (ValueError, AttributeError):
            continue
        if isinstance(event_id, str):
            found.setdefault(event_id, []).append((record.partition, record.offset))
    return found


async def run_demo(
    events_files: list[Path] | None = None, *, timeout_s: float = 120.0
) -> list[OutputRow]:
    waves = [read_lines(path) for path in events_files or sample_waves()]
    total = sum(len(wave) for wave in waves)
    with LocalBroker() as broker, tempfile.TemporaryDirectory(prefix="memdedup-demo-") as data:
        settings = load_settings(
            kafka={
                "bootstrap_servers": broker.bootstrap_servers,
                "group_id": "memdedup-demo",
                "session_timeout_ms": 1500,
                "heartbeat_interval_ms": 500,
            },
            qdrant={"path": data},
            # A free port: the demo must not clash with a consumer already running.
            http={"port": 0},
            log={"level": "ERROR"},
        )
        print(f"local broker on {broker.bootstrap_servers}; embedded store in {data}")
        await ensure_topics(settings)
        app = create_app(settings)
        print("loading the model and starting the consumer ...")
        await app.start()
        try:
            sent = 0
            for number, wave in enumerate(waves, start=1):
                sent += await produce_lines(
                    wave,
                    bootstrap_servers=broker.bootstrap_servers,
                    topic=settings.topics.input,
                    client_kwargs=aiokafka_kwargs(settings.security),
                )
                print(f"wave {number}: published {len(wave)} events to {settings.topics.input}")
                rows = await collect_outputs(settings, expected=sent, timeout_s=timeout_s)
            print()
            operator_lines = await review_and_compact(settings, rows)
            marked = mark_copies(rows, await input_positions(settings))
        finally:
            await app.stop()
    print(render_table(marked, color=is_terminal(sys.stdout)))
    print("\n" + summary(marked))
    print("\nwhile the consumer ran:\n" + "\n".join(operator_lines))
    if len(rows) < total:
        raise RuntimeError(f"only {len(rows)} of {total} events were decided in time")
    return rows


async def review_and_compact(settings: Settings, rows: list[OutputRow]) -> list[str]:
    """The operator commands, against the running consumer: reverse the first
    semantic merge (`memdedup review ... reverse`), then a compaction dry run."""
    lines: list[str] = []
    merge = next((r for r in rows if r.outcome == "merged"), None)
    if merge is not None:
        _, result = await send_review(
            settings, merge.decision_id, ReviewAction.REVERSE, reviewer="demo", wait_s=30
        )
        status = "no answer" if result is None else f"{result.status.value}: {result.detail}"
        lines += [f"memdedup review {merge.decision_id} reverse  ({merge.event_id})", f"  {status}"]
    report_dir = Path(tempfile.mkdtemp(prefix="memdedup-compaction-report-"))
    outcome = await run_compaction(settings, dry_run=True, report_dir=report_dir)
    lines.append("memdedup compact --dry-run")
    lines += ["  " + line for line in render_outcome(outcome, dry_run=True).splitlines()]
    return lines


def main() -> None:
    asyncio.run(run_demo())
