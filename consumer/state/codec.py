"""Point payloads shared by both store adapters.

Memories and decision records live in the same collection (or shard), told apart
by `kind`, so that one upsert stores both atomically.
"""

from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import numpy as np
from pydantic_core import from_json, to_json

from consumer.domain.models import DecisionRecord, FoldedText, MemoryRecord, MergeSource
from consumer.domain.normalize import uuid5_text
from schemas import Decision

KIND_FIELD: Final = "kind"
MEMORY_KIND: Final = "memory"
# Accepted while the model was down: found by exact lookups, invisible to
# similarity search until it is embedded (no vector of its own meanwhile).
PENDING_KIND: Final = "pending_memory"
DECISION_KIND: Final = "decision"
# One point per shard remembers the last changelog offset the shard holds.
META_KIND: Final = "meta"
# A memory folded into another by compaction: its id now points at the keeper,
# so an exact repeat of its text is still skipped into the keeper.
REDIRECT_KIND: Final = "redirect"
# Redirects followed when reading a memory by id (a keeper compacted again later).
MAX_REDIRECTS: Final = 4
# A decision's review status (point id: review_point_id(decision_id)).
REVIEW_KIND: Final = "review"
# A pair of texts a reviewer separated: never skipped or merged again.
REVIEWED_PAIR_KIND: Final = "reviewed_pair"
# What a command emitted, so that a redelivered command re-emits it verbatim.
COMMAND_KIND: Final = "command"
# A memory seen again (a skipped duplicate): its new seen count, carried by the
# changelog under a key of its own and applied to the memory's payload, so that a
# skip does not store the whole memory with its vector again.
SEEN_KIND: Final = "seen"
SEEN_FIELDS: Final = ("seen_count", "first_seen_at", "last_seen_at", "skipped_event_ids")
TENANT_FIELD: Final = "tenant_id"
NAMESPACE_FIELD: Final = "namespace"
HASH_FIELD: Final = "content_hash"
EVENT_ID_FIELD: Final = "event_id"
# A decision's time (Unix seconds), range-indexed: decision retention prunes by it.
DECIDED_AT_FIELD: Final = "decided_at_s"
# Keyword indexes created with the collection; the tenant one is the Qdrant tenant key.
META_NAMESPACE: Final = uuid.UUID("3c9e2f41-7a65-5d08-b1c4-92e7d0a6f853")
INDEXED_FIELDS: Final = (TENANT_FIELD, NAMESPACE_FIELD, KIND_FIELD, HASH_FIELD, EVENT_ID_FIELD)


def memory_payload(memory: MemoryRecord) -> dict[str, Any]:
    return {
        KIND_FIELD: MEMORY_KIND if memory.vector else PENDING_KIND,
        TENANT_FIELD: memory.tenant_id,
        NAMESPACE_FIELD: memory.namespace,
        HASH_FIELD: memory.content_hash,
        "content": memory.content,
        "importance": memory.importance,
        "topics": list(memory.topics),
        "entities": list(memory.entities),
        "merged_event_ids": list(memory.merged_event_ids),
        "origin_event_id": memory.origin_event_id,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "merged_from": [
            {"event_id": s.event_id, "memory_id": s.memory_id} for s in memory.merged_from
        ],
        "supersedes": list(memory.supersedes),
        "folded_texts": [
            {"event_id": t.event_id, "content": t.content} for t in memory.folded_texts
        ],
        **seen_fields(memory),
    }


def seen_fields(memory: MemoryRecord) -> dict[str, Any]:
    """The payload fields a skip changes (`SEEN_FIELDS`), as a memory's payload and
    a seen update both carry them."""
    return {
        "seen_count": memory.seen_count,
        "first_seen_at": (memory.first_seen_at or memory.created_at).isoformat(),
        "last_seen_at": (memory.last_seen_at or memory.updated_at).isoformat(),
        "skipped_event_ids": list(memory.skipped_event_ids),
    }


def memory_from_payload(
    memory_id: str, payload: dict[str, Any], vector: list[float] | None
) -> MemoryRecord:
    if payload.get(KIND_FIELD) == PENDING_KIND:
        vector = None
    created_at = datetime.fromisoformat(payload["created_at"])
    updated_at = datetime.fromisoformat(payload["updated_at"])
    merged_event_ids = list(payload["merged_event_ids"])
    # Payloads stored before lineage existed: seen once plus once per merge.
    first_seen = payload.get("first_seen_at")
    last_seen = payload.get("last_seen_at")
    return MemoryRecord(
        memory_id=memory_id,
        tenant_id=payload[TENANT_FIELD],
        namespace=payload[NAMESPACE_FIELD],
        content=payload["content"],
        content_hash=payload[HASH_FIELD],
        importance=float(payload["importance"]),
        topics=list(payload["topics"]),
        entities=list(payload["entities"]),
        merged_event_ids=merged_event_ids,
        origin_event_id=payload["origin_event_id"],
        created_at=created_at,
        updated_at=updated_at,
        vector=vector,
        merged_from=[
            MergeSource(str(s["event_id"]), str(s["memory_id"]))
            for s in payload.get("merged_from", [])
        ],
        supersedes=list(payload.get("supersedes", [])),
        # Payloads stored before folded texts were kept: none.
        folded_texts=[
            FoldedText(str(t["event_id"]), str(t["content"]))
            for t in payload.get("folded_texts", [])
        ],
        seen_count=int(payload.get("seen_count", 1 + len(merged_event_ids))),
        first_seen_at=datetime.fromisoformat(first_seen) if first_seen else created_at,
        last_seen_at=datetime.fromisoformat(last_seen) if last_seen else updated_at,
        skipped_event_ids=list(payload.get("skipped_event_ids", [])),
    )


def decision_payload(record: DecisionRecord) -> dict[str, Any]:
    return {
        KIND_FIELD: DECISION_KIND,
        EVENT_ID_FIELD: record.event_id,
        "decision_id": record.decision_id,
        TENANT_FIELD: record.tenant_id,
        NAMESPACE_FIELD: record.namespace,
        HASH_FIELD: record.content_hash,
        "memory_id": record.memory_id,
        "decision": record.decision.value,
        "event_json": record.event_json,
        "basis_json": record.basis_json,
        DECIDED_AT_FIELD: record.decided_at_s,
    }


def decision_from_payload(payload: dict[str, Any]) -> DecisionRecord:
    return DecisionRecord(
        event_id=payload[EVENT_ID_FIELD],
        decision_id=payload["decision_id"],
        tenant_id=payload[TENANT_FIELD],
        namespace=payload[NAMESPACE_FIELD],
        content_hash=payload[HASH_FIELD],
        memory_id=payload["memory_id"],
        decision=Decision(payload["decision"]),
        event_json=payload["event_json"],
        basis_json=payload.get("basis_json"),
        decided_at_s=payload.get(DECIDED_AT_FIELD),
    )


_PLACEHOLDERS: dict[int, list[float]] = {}
_PLACEHOLDER_B64: dict[int, str] = {}


def placeholder_vector(dimension: int) -> list[float]:
    """Decision records need a vector; searches filter them out by kind.

    One shared list per dimension (built once): callers must not mutate it."""
    vector = _PLACEHOLDERS.get(dimension)
    if vector is None:
        vector = _PLACEHOLDERS[dimension] = [1.0] + [0.0] * (dimension - 1)
    return vector


def _packed_vector(vector: list[float]) -> str:
    """Base64 of the little-endian float32 vector; the placeholder's is cached."""
    if _PLACEHOLDERS.get(len(vector)) is vector:
        cached = _PLACEHOLDER_B64.get(len(vector))
        if cached is None:
            cached = _PLACEHOLDER_B64[len(vector)] = _b64_f32(vector)
        return cached
    return _b64_f32(vector)


def _b64_f32(vector: list[float]) -> str:
    packer = _F32_PACKERS.get(len(vector))
    if packer is None:
        packer = _F32_PACKERS[len(vector)] = struct.Struct(f"<{len(vector)}f")
    return base64.b64encode(packer.pack(*vector)).decode()


# Little-endian float32 packers by vector length (a third of numpy's cost from a list).
_F32_PACKERS: dict[int, struct.Struct] = {}


def encode_json(value: Any) -> str:
    """Compact JSON as UTF-8 text. pydantic-core's encoder: a quarter of the
    standard library's time on a payload, written for every point of every batch.
    NaN and infinities stay the constants `json.loads` reads back."""
    return to_json(value, inf_nan_mode="constants").decode()


def decode_json(text: str | bytes) -> Any:
    """What `encode_json` (or `json.dumps`) wrote; pydantic-core's parser, less
    than half of `json.loads`' time on a payload, read for every point a batch
    looks up."""
    return from_json(text)


@dataclass(frozen=True, slots=True)
class RawPoint:
    """A point as stored and as carried by the changelog: no re-embedding needed.

    The payload must not change once the point is built: its JSON is encoded once
    and shared by the changelog record and the embedded shard."""

    point_id: str
    vector: list[float]
    payload: dict[str, Any]
    _payload_json: str | None = field(default=None, init=False, repr=False, compare=False)

    def payload_json(self) -> str:
        encoded = self._payload_json
        if encoded is None:
            encoded = encode_json(self.payload)
            object.__setattr__(self, "_payload_json", encoded)
        return encoded

    def to_bytes(self) -> bytes:
        # Compact JSON of {"id", "vector", "payload"}, put together from parts so
        # that the payload's JSON is encoded only once. Only an embedded memory has a
        # vector of its own: the others' placeholder is left out (it was most of a
        # decision record's bytes).
        point_id = encode_json(self.point_id)
        if not has_own_vector(self.payload):
            return f'{{"id":{point_id},"payload":{self.payload_json()}}}'.encode()
        return (
            f'{{"id":{point_id},"vector":"{_packed_vector(self.vector)}",'
            f'"payload":{self.payload_json()}}}'
        ).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> RawPoint:
        """An empty vector: none of its own (the server store writes the placeholder,
        the embedded one no vector). Records written before vectors were left out
        carry the placeholder."""
        document = decode_json(raw)
        packed = document.get("vector")
        if packed is None:
            return cls(document["id"], [], document["payload"])
        vector = np.frombuffer(base64.b64decode(packed), dtype="<f4")
        return cls(document["id"], vector.tolist(), document["payload"])


def has_own_vector(payload: dict[str, Any]) -> bool:
    """Only an embedded memory is found by similarity; every other point's vector
    is the placeholder."""
    return payload.get(KIND_FIELD) == MEMORY_KIND


_POINT_NAMESPACE: Final = uuid.UUID("8b0f7c52-3d1e-5a94-a6e2-0c5d9e41b7f3")


def review_point_id(decision_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, f"review/{decision_id}"))


def command_point_id(command_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, f"command/{command_id}"))


def reviewed_pair_point_id(tenant_id: str, namespace: str, hashes: tuple[str, str]) -> str:
    first, second = sorted(hashes)
    return str(uuid.uuid5(_POINT_NAMESPACE, f"pair/{tenant_id}/{namespace}/{first}/{second}"))


def redirect_point(memory: MemoryRecord, keeper_id: str, dimension: int) -> RawPoint:
    """Replaces a compacted memory: same id, no longer a memory, points at the keeper."""
    return RawPoint(
        memory.memory_id,
        placeholder_vector(dimension),
        {
            KIND_FIELD: REDIRECT_KIND,
            TENANT_FIELD: memory.tenant_id,
            NAMESPACE_FIELD: memory.namespace,
            HASH_FIELD: memory.content_hash,
            "merged_into": keeper_id,
        },
    )


def redirect_target(payload: dict[str, Any]) -> str | None:
    if payload.get(KIND_FIELD) != REDIRECT_KIND:
        return None
    return str(payload["merged_into"])


def reviewed_pair_of(payload: dict[str, Any]) -> tuple[str, str, str, str]:
    """(tenant, namespace, first hash, second hash) of a reviewed-pair point."""
    first, second = payload["hashes"]
    return str(payload[TENANT_FIELD]), str(payload[NAMESPACE_FIELD]), str(first), str(second)


def plain_point(point_id: str, kind: str, fields: dict[str, Any], dimension: int) -> RawPoint:
    """A point that is not a memory (review status, reviewed pair, command record)."""
    return RawPoint(point_id, placeholder_vector(dimension), {KIND_FIELD: kind, **fields})


def memory_point(memory: MemoryRecord, dimension: int = 0) -> RawPoint:
    vector = list(memory.vector) if memory.vector else placeholder_vector(dimension)
    return RawPoint(memory.memory_id, vector, memory_payload(memory))


def is_memory(payload: dict[str, Any]) -> bool:
    return payload.get(KIND_FIELD) in (MEMORY_KIND, PENDING_KIND)


def seen_point_id(memory_id: str) -> str:
    return uuid5_text(_POINT_NAMESPACE, f"seen/{memory_id}")


def seen_point(memory: MemoryRecord) -> RawPoint:
    """The memory's seen count and times, as a skip left them."""
    return RawPoint(
        seen_point_id(memory.memory_id),
        [],
        {
            KIND_FIELD: SEEN_KIND,
            TENANT_FIELD: memory.tenant_id,
            NAMESPACE_FIELD: memory.namespace,
            "memory_id": memory.memory_id,
            **seen_fields(memory),
        },
    )


def seen_update(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(memory id, the payload fields it sets) of a seen point."""
    # Seen updates written before skipped_event_ids existed lack it.
    return str(payload["memory_id"]), {
        name: payload[name] for name in SEEN_FIELDS if name in payload
    }


def fold_seen(memory: dict[str, Any], seen: dict[str, Any]) -> dict[str, Any]:
    """A memory's payload with a seen update, written after it, applied. (A memory
    written whole after the update carries its own count: a reversed skip lowers it.)"""
    if not is_memory(memory):
        return memory
    folded = dict(memory)
    folded.update(seen)
    return folded


def decision_point(record: DecisionRecord, dimension: int) -> RawPoint:
    return RawPoint(record.decision_id, placeholder_vector(dimension), decision_payload(record))


def meta_point_id(partition: int) -> str:
    return str(uuid.uuid5(META_NAMESPACE, f"changelog-position/{partition}"))


def meta_point(partition: int, changelog_offset: int, dimension: int) -> RawPoint:
    return RawPoint(
        meta_point_id(partition),
        placeholder_vector(dimension),
        {KIND_FIELD: META_KIND, "changelog_offset": changelog_offset},
    )
