"""How the embedded store lays points out in a shard: the payload stored (the fields
searches filter on, and the rest as one JSON string), the filters reading them, and
what a shard of an earlier layout is given when it is opened."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

import structlog
from qdrant_edge import (
    CountRequest,
    FieldCondition,
    Filter,
    IsEmptyCondition,
    KeywordIndexParams,
    MatchValue,
    PayloadSchemaType,
    RangeFloat,
    ScrollRequest,
    UpdateOperation,
)

from consumer.state import codec
from schemas import scope_key

log = structlog.get_logger(__name__)

# A shard stores the fields its searches filter on, plus the whole payload as one
# JSON string. The engine converts every payload value on its own (a few
# microseconds per string, as much per list item): one string instead of a memory's
# 17 values and lists makes writing a point ~3x cheaper, and the JSON is the very
# string the changelog record carries. Shards written before keep plain payloads.
PAYLOAD_JSON_FIELD: Final = "payload_json"
# A seen update of a memory (codec.SEEN_KIND), set on the memory's point; storing
# the memory whole again replaces the payload and with it this field.
SEEN_JSON_FIELD: Final = "seen_json"
FILTERED_FIELDS: Final = (codec.KIND_FIELD, codec.TENANT_FIELD, codec.NAMESPACE_FIELD)
# Kinds read by scope (search, scroll, count); every other point is read by id, and
# each stored field costs its conversion (a decision point: 14 -> 9 us).
SCOPED_KINDS: Final = frozenset({codec.MEMORY_KIND, codec.PENDING_KIND, codec.REVIEWED_PAIR_KIND})
# What a point without a vector of its own (a decision, a pending memory, the
# changelog position) is stored with: no vector at all, so a shard's vector storage
# holds memories only. The placeholder such points had was 1.5 KB per decision,
# one per event, and ~2 us more to upsert. Shards written before keep theirs.
NO_VECTOR: Final[dict[str, Any]] = {}
# A searchable memory's scope as one keyword ("tenant/namespace"; neither may hold
# a "/"), on memories with vectors only: a similarity search filters on it alone,
# so the engine walks just the scope's points, straight from its index. Filtering
# on kind, tenant and namespace walked the tenant's points and checked the other
# two on each: at 1M memories in 10 x 5 scopes, 23.8 -> 3.0 ms a query. Memories
# of a shard written before (or by an earlier version since) get it when opened.
SEARCH_SCOPE_FIELD: Final = "search_scope"


def stored_payload(point: codec.RawPoint, *, decision_times: bool = False) -> dict[str, Any]:
    """The fields a point is stored with. `decision_times`: decisions also store
    their time, range-indexed, for decision retention (~3 us more per decision
    upsert, so only where retention is on)."""
    payload = point.payload
    kind = payload.get(codec.KIND_FIELD)
    stored: dict[str, Any]
    if kind in SCOPED_KINDS:
        stored = {name: payload[name] for name in FILTERED_FIELDS if name in payload}
        if kind == codec.MEMORY_KIND:
            stored[SEARCH_SCOPE_FIELD] = search_scope(stored)
    else:
        stored = {codec.KIND_FIELD: kind} if kind is not None else {}
        if decision_times and kind == codec.DECISION_KIND:
            decided_at = payload.get(codec.DECIDED_AT_FIELD)
            stored[codec.DECIDED_AT_FIELD] = time.time() if decided_at is None else decided_at
    stored[PAYLOAD_JSON_FIELD] = point.payload_json()
    return stored


def payload_of(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The payload a point was written with, from its stored form, with the last
    seen update applied."""
    if not stored:
        return {}
    packed = stored.get(PAYLOAD_JSON_FIELD)
    if packed is None:
        return stored
    payload: dict[str, Any] = codec.decode_json(packed)
    seen = stored.get(SEEN_JSON_FIELD)
    if seen is not None:
        payload = codec.fold_seen(payload, codec.decode_json(seen))
    return payload


def memories_present(shard: Any, points: Sequence[codec.RawPoint]) -> set[str]:
    """Which of the memories that `points`' seen updates name the shard holds."""
    targets = [
        codec.seen_update(p.payload)[0]
        for p in points
        if p.payload.get(codec.KIND_FIELD) == codec.SEEN_KIND
    ]
    if not targets:
        return set()
    return {str(r.id) for r in shard.retrieve(targets, with_payload=False, with_vector=False)}


def search_scope(stored: dict[str, Any]) -> str:
    return scope_key(stored[codec.TENANT_FIELD], stored[codec.NAMESPACE_FIELD])


def ensure_index(shard: Any, field: str, schema: Any) -> None:
    """A payload index on `field`, created if the shard lacks it (an earlier layout)."""
    if field not in shard.info().payload_schema:
        shard.update(UpdateOperation.create_field_index(field, schema))


def ensure_indexes(shard: Any, *, decision_times: bool) -> None:
    """The shard's payload indexes, created where missing: a process killed
    between creating a shard and indexing it leaves a shard without them."""
    for field in (*codec.INDEXED_FIELDS, SEARCH_SCOPE_FIELD):
        schema: Any = (
            KeywordIndexParams(is_tenant=True)
            if field == codec.TENANT_FIELD
            else PayloadSchemaType.Keyword
        )
        ensure_index(shard, field, schema)
    if decision_times:
        ensure_index(shard, codec.DECIDED_AT_FIELD, PayloadSchemaType.Float)


def complete_search_scope(shard: Any, partition: int) -> None:
    """Set `SEARCH_SCOPE_FIELD` on the shard's memories that lack it: all of a shard
    written before the field existed, or those an earlier version wrote into it
    since (a rollback). Run at every open; finding none is one index lookup."""
    ensure_index(shard, SEARCH_SCOPE_FIELD, PayloadSchemaType.Keyword)
    lacking = Filter(
        must=[
            match(codec.KIND_FIELD, codec.MEMORY_KIND),
            IsEmptyCondition(key=SEARCH_SCOPE_FIELD),
        ]
    )
    started = time.perf_counter()
    offset: Any = None
    memories = 0
    while True:
        records, offset = shard.scroll(
            ScrollRequest(
                limit=1_000, offset=offset, filter=lacking, with_payload=True, with_vector=False
            )
        )
        by_scope: dict[str, list[Any]] = {}
        for record in records:
            by_scope.setdefault(search_scope(record.payload), []).append(record.id)
        for scope, ids in by_scope.items():
            shard.update(UpdateOperation.set_payload(ids, {SEARCH_SCOPE_FIELD: scope}))
        memories += len(records)
        if offset is None or not records:
            break
    if memories:
        shard.flush()
        log.info(
            "shard_search_scope_set",
            partition=partition,
            memories=memories,
            seconds=round(time.perf_counter() - started, 1),
        )


def complete_decision_times(shard: Any, partition: int) -> None:
    """Give the shard's decisions that lack `DECIDED_AT_FIELD` (written before it
    existed, or while retention was off) the time of this open, so that retention
    keeps them one full period from now rather than pruning them at once. Run at
    every open while retention is on."""
    ensure_index(shard, codec.DECIDED_AT_FIELD, PayloadSchemaType.Float)
    lacking = Filter(
        must=[
            match(codec.KIND_FIELD, codec.DECISION_KIND),
            IsEmptyCondition(key=codec.DECIDED_AT_FIELD),
        ]
    )
    undated = shard.count(CountRequest(filter=lacking, exact=True))
    if undated:
        shard.update(
            UpdateOperation.set_payload_by_filter(lacking, {codec.DECIDED_AT_FIELD: time.time()})
        )
        shard.flush()
        log.info("shard_decision_times_set", partition=partition, decisions=undated)


def expired_filter(before: float) -> Filter:
    return Filter(
        must=[
            match(codec.KIND_FIELD, codec.DECISION_KIND),
            FieldCondition(key=codec.DECIDED_AT_FIELD, range=RangeFloat(lt=before)),
        ]
    )


def search_filter(tenant_id: str, namespace: str) -> Filter:
    return Filter(must=[match(SEARCH_SCOPE_FIELD, scope_key(tenant_id, namespace))])


def match(key: str, value: str) -> FieldCondition:
    return FieldCondition(key=key, match=MatchValue(value))


def scope_filter(tenant_id: str | None, namespace: str | None, kind: str) -> Filter:
    must: list[Any] = [match(codec.KIND_FIELD, kind)]
    if tenant_id is not None:
        must.append(match(codec.TENANT_FIELD, tenant_id))
    if namespace is not None:
        must.append(match(codec.NAMESPACE_FIELD, namespace))
    return Filter(must=must)
