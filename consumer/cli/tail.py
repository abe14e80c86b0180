"""`memdedup tail`: decisions and dead letters as the service publishes them.

Reads like the other operator commands (consumer.kafka.topic_reader): partitions are
assigned and nothing is committed, so a tail never joins the service's consumer
group nor takes partitions from a running consumer. Rows are the demo's
(consumer.cli.demo); memory texts appear only with --show-text.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TextIO

from aiokafka import TopicPartition
from pydantic import ValidationError

from consumer.cli.demo import OutputRow, _row
from consumer.errors import PermanentError
from consumer.kafka.offsets import exact_end_offsets
from consumer.kafka.topic_reader import TopicsUnavailable, partitions_of, topic_reader
from consumer.settings import Settings
from schemas import DeadLetterCode, DeadLetterHeaders, MemoryDecisionEvent

Which = Literal["decisions", "dlq", "all"]
WHICH: tuple[Which, ...] = ("decisions", "dlq", "all")

# With --exit-at-end: give up when the partitions still to read deliver nothing this long.
STALL_S = 30.0
# Decisions remembered to mark re-emitted copies; a long tail must not grow without end.
SEEN_LIMIT = 100_000


class TopicsMissing(PermanentError):
    """Some topics to tail do not exist; the message says how to create them."""


def tail_topics(settings: Settings, which: Which) -> list[str]:
    topics = settings.topics
    decisions = [topics.accepted, topics.merged, topics.skipped]
    return {"decisions": decisions, "dlq": [topics.dlq], "all": [*decisions, topics.dlq]}[which]


@dataclass(frozen=True, slots=True)
class TailRow:
    """A demo row, with what the JSON output adds: the full memory id, the
    decision's fields, a dead letter's code and whole detail."""

    row: OutputRow
    re_emitted: bool = False
    memory_id: str | None = None
    decision: str | None = None
    reason: str | None = None
    similarity: float | None = None
    error_code: str | None = None
    error_detail: str | None = None

    def as_json(self, *, show_text: bool) -> dict[str, Any]:
        row = self.row
        document: dict[str, Any] = {
            "topic": row.topic,
            "input_partition": row.partition_in,
            "input_offset": row.offset_in,
            "event_id": row.event_id,
            "scope": row.scope,
            "outcome": row.outcome,
            "detail": row.detail,
            "re_emitted": self.re_emitted,
        }
        if self.error_code is not None:
            document |= {"error_code": self.error_code, "error_detail": self.error_detail}
        else:
            document |= {
                "decision_id": row.decision_id,
                "decision": self.decision,
                "reason": self.reason,
                "similarity": self.similarity,
                "memory_id": self.memory_id,
            }
            if show_text:
                document["content"] = row.content
        return document


def tail_row(
    topic: str, value: bytes | None, headers: Sequence[tuple[str, bytes]], settings: Settings
) -> TailRow:
    """The row of one decision or dead-letter record; one that cannot be read
    becomes an `unreadable` row rather than vanishing."""
    try:
        if topic == settings.topics.dlq:
            dead = DeadLetterHeaders.from_kafka(headers)
            return TailRow(
                _row(topic, value or b"", list(headers), settings),
                error_code=dead.error_code.value,
                error_detail=dead.error_detail,
            )
        event = MemoryDecisionEvent.model_validate_json(value or b"")
        return TailRow(
            _row(topic, value or b"", list(headers), settings),
            memory_id=event.memory_id,
            decision=event.decision.value,
            reason=event.reason.value,
            similarity=event.similarity,
        )
    except (ValidationError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        what = "dead-letter headers" if topic == settings.topics.dlq else "decision event"
        row = OutputRow(
            topic, -1, -1, "-", "-", "unreadable", f"not a {what}: {type(exc).__name__}", "-", ""
        )
        return TailRow(row)


# The table's columns, widths fixed up front (rows stream): the outcome fits every
# dead-letter code, the others the usual ids and let a longer value push the row.
OUTCOME_WIDTH = max(
    len("skipped (re-emitted)"), *(len(f"dlq:{code.value}") for code in DeadLetterCode)
)
DETAIL_WIDTH = 48
TEXT_WIDTH = 44


def _columns(show_text: bool) -> list[tuple[str, int]]:
    columns = [
        ("input", 10),
        ("event_id", 20),
        ("scope", 20),
        ("outcome", OUTCOME_WIDTH),
        ("memory", 8),
        ("why", DETAIL_WIDTH),
    ]
    return [*columns, ("stored memory text", TEXT_WIDTH)] if show_text else columns


def _join(cells: Sequence[str], columns: Sequence[tuple[str, int]]) -> str:
    return "  ".join(cell.ljust(width) for cell, (_, width) in zip(cells, columns, strict=True))


def table_header(*, show_text: bool) -> list[str]:
    columns = _columns(show_text)
    return [
        _join([name for name, _ in columns], columns).rstrip(),
        _join(["-" * width for _, width in columns], columns),
    ]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def table_line(item: TailRow, *, show_text: bool) -> str:
    row = item.row
    position = "-" if row.offset_in < 0 else f"p{row.partition_in}@{row.offset_in}"
    cells = [
        position,
        row.event_id,
        row.scope,
        row.outcome + (" (re-emitted)" if item.re_emitted else ""),
        row.memory_id,
        # Last column without the text: a dead letter's whole detail fits there.
        _clip(row.detail, DETAIL_WIDTH) if show_text else row.detail,
    ]
    if show_text:
        cells.append(_clip(row.content, TEXT_WIDTH))
    return _join(cells, _columns(show_text)).rstrip()


class Printer:
    """Writes rows as table lines or JSON objects, one a line, flushed at once
    (a tail is read as it goes); marks the copies of a decision re-emitted by a
    redelivery as the demo's table does."""

    def __init__(self, out: TextIO, *, as_json: bool, show_text: bool) -> None:
        self._out = out
        self._as_json = as_json
        self._show_text = show_text
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.rows = 0

    def header(self) -> None:
        if not self._as_json:
            self._write(table_header(show_text=self._show_text))

    def __call__(self, item: TailRow) -> None:
        row = item.row
        if row.event_id != "-" and not row.outcome.startswith(("dlq:", "unreadable")):
            key = (row.event_id, row.outcome)
            if key in self._seen:
                item = replace(item, re_emitted=True)
            self._seen[key] = None
            self._seen.move_to_end(key)
            if len(self._seen) > SEEN_LIMIT:
                self._seen.popitem(last=False)
        self.rows += 1
        if self._as_json:
            self._write([json.dumps(item.as_json(show_text=self._show_text))])
        else:
            self._write([table_line(item, show_text=self._show_text)])

    def _write(self, lines: list[str]) -> None:
        self._out.write("".join(line + "\n" for line in lines))
        self._out.flush()


async def tail(
    settings: Settings,
    emit: Callable[[TailRow], None],
    *,
    which: Which = "all",
    from_beginning: bool = False,
    exit_at_end: bool = False,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Emit a row per record of the tailed topics: new ones (or, with
    `from_beginning`, all kept ones) until cancelled, or with `exit_at_end` until
    the ends as they stood when it started. `on_ready`: called once the start
    positions are taken (a record published after it is shown)."""
    topics = tail_topics(settings, which)
    async with topic_reader(settings) as reader:
        existing = await reader.topics()
        missing = [topic for topic in topics if topic not in existing]
        if missing:
            raise TopicsMissing(
                f"{', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not exist on "
                f"{settings.kafka.bootstrap_servers}: create the topics with `memdedup topics` "
                "(or start the consumer, `memdedup run`, which creates them), then tail again"
            )
        partitions = await partitions_of(reader, topics)
        ends = await exact_end_offsets(reader, partitions, poll_ms=50)  # assigns them too
        start = await reader.beginning_offsets(partitions) if from_beginning else ends
        for tp in partitions:
            reader.seek(tp, start[tp])
        remaining = {tp for tp in partitions if start[tp] < ends[tp]}
        if on_ready is not None:
            on_ready()
        idle_since = time.monotonic()
        while remaining or not exit_at_end:
            batches = await reader.getmany(timeout_ms=500, max_records=1_000)
            if not any(batches.values()):
                if exit_at_end and time.monotonic() - idle_since > STALL_S:
                    raise TopicsUnavailable(f"reading {_names(remaining)} stalled")
                continue
            idle_since = time.monotonic()
            for tp, records in batches.items():
                for record in records:
                    if exit_at_end and record.offset >= ends[tp]:
                        break
                    emit(tail_row(record.topic, record.value, record.headers or (), settings))
                if records and records[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)


def _names(partitions: set[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}/{tp.partition}" for tp in sorted(partitions))
