"""Publishing input events from JSON Lines (for users, the demo and tests)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from schemas import scope_key


def key_for(raw: bytes) -> bytes | None:
    """`{tenant_id}/{namespace}` when the line names both; bad lines go unkeyed
    (they are published as they are, so the consumer can dead-letter them)."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    tenant, namespace = document.get("tenant_id"), document.get("namespace")
    if isinstance(tenant, str) and isinstance(namespace, str):
        return scope_key(tenant, namespace).encode()
    return None


def read_lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


async def produce_lines(
    lines: Iterable[bytes],
    *,
    bootstrap_servers: str,
    topic: str,
    client_kwargs: dict[str, Any] | None = None,
) -> int:
    """Publish each line, keyed by its scope; returns how many were acknowledged.
    `client_kwargs`: connection security (consumer.kafka_security.aiokafka_kwargs)."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers, acks="all", **(client_kwargs or {})
    )
    await producer.start()
    try:
        pending = [await producer.send(topic, value=line, key=key_for(line)) for line in lines]
        for future in pending:
            await future
        return len(pending)
    finally:
        await producer.stop()
