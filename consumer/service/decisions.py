"""The records a batch emits, built from what was decided or refused: decision
events and the decision records stored with them, dead letters, reroutes."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

import structlog

from consumer.domain.guards import related_kind
from consumer.domain.models import DecisionRecord, MemoryRecord, Outcome
from consumer.domain.normalize import decision_id_for
from consumer.kafka.publisher import record_size
from consumer.kafka.records import OCTET_STREAM, InputRecord, OutgoingRecord
from consumer.service.validation import Rejection
from consumer.state import codec
from schemas import (
    CheckReport,
    DeadLetterHeaders,
    Decision,
    DecisionReason,
    GuardReport,
    MemoryDecisionEvent,
    RecordPosition,
    RelatedMemory,
    memory_urn,
)
from schemas.events import FoldedText as SchemaFoldedText
from schemas.events import MergeSource as SchemaMergeSource
from schemas.events import RelatedKind, StoredMemory

log = structlog.get_logger(__name__)

REROUTED_HEADER = "memdedup-rerouted-from"


def stored_memory(memory: MemoryRecord) -> StoredMemory:
    """A memory as decision and reversal events carry it."""
    return StoredMemory(
        memory_id=memory.memory_id,
        content=memory.content,
        content_hash=memory.content_hash,
        importance=memory.importance,
        topics=memory.topics,
        entities=memory.entities,
        merged_event_ids=memory.merged_event_ids,
        origin_event_id=memory.origin_event_id,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        merged_from=[
            SchemaMergeSource(event_id=s.event_id, memory_id=s.memory_id)
            for s in memory.merged_from
        ],
        supersedes=memory.supersedes,
        folded_texts=[
            SchemaFoldedText(event_id=t.event_id, content=t.content) for t in memory.folded_texts
        ],
        seen_count=memory.seen_count,
        first_seen_at=memory.first_seen_at or memory.created_at,
        last_seen_at=memory.last_seen_at or memory.updated_at,
    )


def reversal_basis(outcome: Outcome) -> str | None:
    """What a later reversal of this decision needs, for semantic skips and merges:
    the event's own text and fields, and the matched memory before the decision."""
    before = outcome.target_before
    if before is None or outcome.reason is not DecisionReason.SEMANTIC:
        return None
    event = outcome.candidate.event
    document = {
        "event": {
            "content": event.content.strip(),
            "importance": event.importance,
            "topics": list(event.topics),
            "entities": list(event.entities),
        },
        "target_before": {"memory_id": before.memory_id, **codec.memory_payload(before)},
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def build_decision_event(
    outcome: Outcome, model_id: str, decision_id: str | None = None
) -> MemoryDecisionEvent:
    """`decision_id`: the event's, when the caller has it already."""
    candidate = outcome.candidate
    event = candidate.event
    memory = outcome.memory
    return MemoryDecisionEvent(
        decision_id=decision_id or decision_id_for(event.event_id),
        event_id=event.event_id,
        tenant_id=event.tenant_id,
        namespace=event.namespace,
        decision=outcome.decision,
        reason=outcome.reason,
        similarity=None if outcome.similarity is None else round(outcome.similarity, 6),
        threshold=outcome.threshold,
        memory_id=memory.memory_id,
        memory_urn=memory_urn(memory.tenant_id, memory.namespace, memory.memory_id),
        memory=stored_memory(memory),
        checks=[
            CheckReport(name=c.name, hit=c.hit, duration_ms=c.duration_ms, score=c.score)
            for c in outcome.checks
        ],
        model=model_id,
        decided_at=outcome.decided_at,
        record=RecordPosition(
            topic=candidate.record.topic,
            partition=candidate.record.partition,
            offset=candidate.record.offset,
        ),
        content_hash=candidate.content_hash,
        superseded_memory_id=outcome.superseded_memory_id,
        degraded=bool(outcome.skipped_checks),
        skipped_checks=list(outcome.skipped_checks),
        merge_policy=outcome.merge_policy,
        merge_fallback=outcome.merge_fallback,
        guard=None
        if outcome.guard is None
        else GuardReport(
            name=outcome.guard.veto.guard.value,
            detail=outcome.guard.veto.detail,
            memory_id=outcome.guard.memory_id,
            similarity=round(outcome.guard.similarity, 6),
        ),
        related=[
            RelatedMemory(
                memory_id=hit.memory_id,
                similarity=round(hit.similarity, 6),
                kind=cast(RelatedKind, related_kind(hit.veto)),
            )
            for hit in outcome.related
        ],
    )


def decision_records(
    outcomes: Sequence[Outcome], model_id: str
) -> tuple[list[DecisionRecord], dict[str, tuple[Decision, bytes]]]:
    """The decision records to store for outcomes, and each event's decision with
    the payload of its decision event, by event id."""
    records: list[DecisionRecord] = []
    payloads: dict[str, tuple[Decision, bytes]] = {}
    decided_at_s = time.time()
    for outcome in outcomes:
        candidate = outcome.candidate
        decision_id = decision_id_for(candidate.event.event_id)
        event = build_decision_event(outcome, model_id, decision_id)
        payload = event.model_dump_json().encode()
        payloads[candidate.event.event_id] = (outcome.decision, payload)
        records.append(
            DecisionRecord(
                event_id=candidate.event.event_id,
                decision_id=decision_id,
                tenant_id=candidate.event.tenant_id,
                namespace=candidate.event.namespace,
                content_hash=candidate.content_hash,
                memory_id=outcome.memory.memory_id,
                decision=outcome.decision,
                event_json=payload.decode(),
                basis_json=reversal_basis(outcome),
                decided_at_s=decided_at_s,
            )
        )
    return records, payloads


def dead_letter(rejection: Rejection, *, topic: str, max_record_bytes: int) -> OutgoingRecord:
    """The input record's bytes with why they were refused; an input too large
    for a record of its own keeps its first bytes, and its size and digest."""
    record = rejection.record
    value = record.value or b""
    key = record.key
    headers = text_headers(record)
    # Input headers or a key that would crowd out the body are left out: the
    # original keeps them, at the source position the headers name.
    if sum(len(n) + len(v.encode()) for n, v in headers.items()) > max_record_bytes // 4:
        headers = {}
    if key is not None and len(key) > max_record_bytes // 8:
        key = None
    reason = DeadLetterHeaders(
        error_code=rejection.code,
        error_detail=rejection.detail,
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
    )
    headers.update(reason.to_kafka())
    if rejection.event_id is not None:
        headers["event_id"] = rejection.event_id[:128]
    source = (record.partition, record.offset)
    # The input's bytes as they came: nothing says they are JSON.
    dead = OutgoingRecord(topic, key, value, headers, source=source, content_type=OCTET_STREAM)
    if record_size(dead) > max_record_bytes:
        headers.update(
            reason.model_copy(
                update={
                    "original_bytes": len(value),
                    "original_sha256": hashlib.sha256(value).hexdigest(),
                }
            ).to_kafka()
        )
        dead = replace(dead, headers=headers, value=b"")
        room = max(0, max_record_bytes - record_size(dead))
        dead = replace(dead, value=value[:room])
    log.warning(
        "dead_lettered",
        error_code=rejection.code.value,
        error_detail=rejection.detail,
        event_id=rejection.event_id,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        bytes=len(value),
        truncated=len(dead.value) < len(value),
    )
    return dead


def reroute(record: InputRecord, key: bytes, partition: int | None) -> OutgoingRecord:
    """Send a record to its scope's partition, with the scope's key."""
    headers = text_headers(record)
    headers[REROUTED_HEADER] = f"{record.topic}/{record.partition}/{record.offset}"
    log.warning(
        "rerouted",
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        to_partition=partition,
        key_matched=record.key == key,
    )
    return OutgoingRecord(record.topic, key, record.value or b"", headers, partition)


def text_headers(record: InputRecord) -> dict[str, str]:
    # Kafka allows null header values; keep them as empty strings.
    return {
        name: raw.decode("utf-8", "replace") if raw is not None else ""
        for name, raw in record.headers
    }
