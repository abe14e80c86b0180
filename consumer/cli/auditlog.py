"""The audit log (`memdedup log`) and reviews (`memdedup review`).

The decision topics are the log: every decision the service took is there,
with its similarity, threshold, guard and matched memory, whatever store the
consumers use, and reading them never disturbs running consumers. A review's
outcome comes from the command-results topic. Texts never appear: the new
text's hash and the matched memory's id do.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from pydantic import ValidationError

from consumer.cli.tables import is_terminal, render_table
from consumer.domain.descriptions import describe_decision
from consumer.errors import PermanentError
from consumer.kafka.topic_reader import await_results, end_offsets, publish, read_all
from consumer.settings import Settings
from schemas import (
    SCHEMA_VERSION,
    CommandResult,
    CommandStatus,
    Decision,
    DecisionReason,
    MemoryCommand,
    MemoryDecisionEvent,
    ReviewAction,
    ReviewCommand,
    ReviewStatus,
    scope_key,
)


class ReviewRefused(PermanentError):
    """The review cannot be sent; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class LogEntry:
    decision: MemoryDecisionEvent
    review_status: ReviewStatus

    def as_json(self) -> dict[str, Any]:
        event = self.decision
        return {
            "decided_at": event.decided_at.isoformat(),
            "decision_id": event.decision_id,
            "event_id": event.event_id,
            "tenant_id": event.tenant_id,
            "namespace": event.namespace,
            "decision": event.decision.value,
            "reason": event.reason.value,
            "similarity": event.similarity,
            "threshold": event.threshold,
            "content_hash": event.content_hash,
            "memory_id": event.memory_id,
            "removed_memory_id": event.superseded_memory_id,
            "guard": event.guard.name if event.guard else None,
            "merge_policy": event.merge_policy,
            "degraded": event.degraded,
            "review_status": self.review_status.value,
        }


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO-8601 time (UTC if no offset), or a duration back from now: 30m, 2h, 7d."""
    match = _DURATION.match(text.strip())
    if match:
        amount, unit = float(match.group(1)), match.group(2)
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[unit]: amount})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(
            f"--since {text!r}: give an ISO time (2026-11-22T10:00:00Z) or a duration (30m, 2h, 7d)"
        ) from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


async def review_statuses(settings: Settings) -> dict[str, ReviewStatus]:
    """Decision id -> status after the last applied review."""
    statuses: dict[str, ReviewStatus] = {}
    async for record in read_all(settings, [settings.topics.command_results]):
        try:
            result = CommandResult.model_validate_json(record.value or b"")
        except ValidationError:
            continue
        if (
            result.type == "review"
            and result.status is CommandStatus.APPLIED
            and result.decision_id
            and result.review_status
        ):
            statuses[result.decision_id] = result.review_status
    return statuses


def decision_topics(settings: Settings) -> list[str]:
    return [settings.topics.accepted, settings.topics.merged, settings.topics.skipped]


async def read_log(
    settings: Settings,
    *,
    tenant: str | None = None,
    namespace: str | None = None,
    decisions: Sequence[str] = (),
    since: datetime | None = None,
    decision_id: str | None = None,
) -> list[LogEntry]:
    """Decisions matching every filter given, oldest first; a replayed decision
    (same decision id, same bytes) is listed once."""
    statuses = await review_statuses(settings)
    seen: set[str] = set()
    entries: list[LogEntry] = []
    # Records are published after their decision: seek by time, with a margin
    # for clocks, and filter on decided_at below.
    since_ms = None if since is None else int(since.timestamp() * 1000) - 60_000
    async for record in read_all(settings, decision_topics(settings), since_ms=since_ms):
        try:
            event = MemoryDecisionEvent.model_validate_json(record.value or b"")
        except ValidationError:
            continue
        if event.decision_id in seen:
            continue
        seen.add(event.decision_id)
        if (
            (tenant is not None and event.tenant_id != tenant)
            or (namespace is not None and event.namespace != namespace)
            or (decisions and event.decision.value not in decisions)
            or (since is not None and event.decided_at < since)
            or (decision_id is not None and event.decision_id != decision_id)
        ):
            continue
        entries.append(LogEntry(event, statuses.get(event.decision_id, ReviewStatus.UNREVIEWED)))
    entries.sort(key=lambda e: (e.decision.decided_at, e.decision.decision_id))
    return entries


def render_log(entries: Sequence[LogEntry], out: TextIO) -> None:
    header = (
        "decided_at",
        "decision_id",
        "event_id",
        "scope",
        "decision",
        "reason",
        "similarity",
        "new_hash",
        "memory",
        "guard",
        "review",
    )
    rows = []
    for entry in entries:
        event = entry.decision
        rows.append(
            (
                event.decided_at.strftime("%Y-%m-%d %H:%M:%S"),
                event.decision_id,
                event.event_id,
                scope_key(event.tenant_id, event.namespace),
                event.decision.value,
                event.reason.value,
                "-" if event.similarity is None else f"{event.similarity:.3f}",
                (event.content_hash or "")[:12] or "-",
                event.memory_id,
                event.guard.name if event.guard else "-",
                entry.review_status.value,
            )
        )
    out.write(render_table(header, rows, right={"similarity"}, color=is_terminal(out)) + "\n")
    out.write(f"{len(entries)} decisions\n")


def render_log_json(entries: Sequence[LogEntry], out: TextIO) -> None:
    json.dump([entry.as_json() for entry in entries], out, indent=2)
    out.write("\n")


# ---------------------------------------------------------------------- review


def _refusal(entry: LogEntry, action: ReviewAction) -> str | None:
    """Why the consumer would reject this review (checked before sending, for a
    clear message at once; the consumer checks again)."""
    event = entry.decision
    if entry.review_status is ReviewStatus.REVERSED:
        return f"decision {event.decision_id} was already reversed"
    if action is ReviewAction.CONFIRM:
        return None
    if event.decision is Decision.ACCEPTED:
        return (
            f"decision {event.decision_id} accepted a new memory: there is nothing to reverse "
            "(reverse the skip or merge that folded another event into it instead)"
        )
    if event.reason is not DecisionReason.SEMANTIC:
        why = _NOT_SEPARABLE.get(event.reason, "it was not decided on similarity")
        return (
            f"decision {event.decision_id} {describe_decision(event.decision, event.reason)}: "
            f"{why} (only semantic skips and merges can be reversed)"
        )
    return None


_SAME_TEXT = "the event's text is the memory's own text, so there is nothing to separate"
_NOT_SEPARABLE = {
    DecisionReason.EXACT: _SAME_TEXT,
    DecisionReason.RECENT: _SAME_TEXT,
    DecisionReason.COMPACTION: "compaction folded one stored memory into another",
}


async def send_review(
    settings: Settings,
    decision_id: str,
    action: ReviewAction,
    *,
    reviewer: str | None = None,
    note: str | None = None,
    wait_s: float = 30.0,
) -> tuple[MemoryCommand, CommandResult | None]:
    """Publish a review command for the consumer that owns the decision's scope;
    with `wait_s` > 0, wait for its result (None: not applied within the wait,
    e.g. no consumer running: it stays queued and is applied later)."""
    found = await read_log(settings, decision_id=decision_id)
    if not found:
        raise ReviewRefused(
            f"decision {decision_id} is not on {', '.join(decision_topics(settings))}; "
            "list decisions with `memdedup log` and copy the decision_id column"
        )
    entry = found[0]
    refusal = _refusal(entry, action)
    if refusal is not None:
        raise ReviewRefused(refusal)
    event = entry.decision
    command = MemoryCommand(
        schema_version=SCHEMA_VERSION,
        command_id=f"review-{uuid.uuid4().hex}",
        tenant_id=event.tenant_id,
        namespace=event.namespace,
        issued_at=datetime.now(UTC),
        command=ReviewCommand(
            decision_id=event.decision_id,
            event_id=event.event_id,
            action=action,
            reviewer=reviewer,
            note=note,
        ),
    )
    results = await send_commands(settings, [command], wait_s=wait_s)
    return command, results.get(command.command_id)


async def send_commands(
    settings: Settings,
    commands: Sequence[MemoryCommand],
    *,
    wait_s: float,
    on_result: Any = None,
) -> dict[str, CommandResult]:
    """Publish commands on the input topic, keyed by scope; wait up to `wait_s`
    for their results."""
    start = await end_offsets(settings, [settings.topics.command_results])
    await publish(
        settings,
        settings.topics.input,
        [(c.key.encode(), c.to_bytes()) for c in commands],
    )
    if wait_s <= 0:
        return {}

    def command_id(record: Any) -> str | None:
        try:
            return str(json.loads(record.value)["command_id"])
        except (ValueError, KeyError, TypeError):
            return None

    arrived = await await_results(
        settings,
        settings.topics.command_results,
        start,
        {c.command_id for c in commands},
        id_of=command_id,
        timeout_s=wait_s,
        on_result=on_result,
    )
    return {key: CommandResult.model_validate_json(record.value) for key, record in arrived.items()}
