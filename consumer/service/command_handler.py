"""What every command handler shares: the engine and store it works on, and the
records a command emits (its result last)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from consumer.domain.dedup import DedupEngine
from consumer.kafka.records import OutgoingRecord
from consumer.ports import MemoryStore
from consumer.service.validation import ParsedCommand
from consumer.settings import TopicSettings
from schemas import CommandResult, CommandStatus, RecordPosition, scope_key

log = structlog.get_logger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


class CommandHandler:
    """A kind of command, applied to the scope it names: returns the points it
    changes and the records it emits (consumer.service.command_processor persists
    and publishes them)."""

    def __init__(
        self,
        *,
        engine: DedupEngine,
        store: MemoryStore,
        topics: TopicSettings,
        model_id: str,
        dimension: int,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._engine = engine
        self._store = store
        self._topics = topics
        self._model_id = model_id
        # Non-memory points still need a vector of the collection's dimension.
        self._dimension = dimension
        self._clock = clock

    def _record(self, topic: str, item: ParsedCommand, body: str) -> OutgoingRecord:
        key = scope_key(item.command.tenant_id, item.command.namespace).encode()
        return OutgoingRecord(topic, key, body.encode())

    def _result(
        self,
        item: ParsedCommand,
        status: CommandStatus,
        detail: str,
        **fields: Any,
    ) -> OutgoingRecord:
        command = item.command
        result = CommandResult(
            command_id=command.command_id,
            type=command.command.type,
            tenant_id=command.tenant_id,
            namespace=command.namespace,
            status=status,
            detail=detail,
            applied_at=self._clock(),
            record=RecordPosition(
                topic=item.record.topic, partition=item.record.partition, offset=item.record.offset
            ),
            **fields,
        )
        log.info(
            "command_applied" if status is CommandStatus.APPLIED else "command_rejected",
            command_id=command.command_id,
            type=command.command.type,
            detail=detail,
        )
        return self._record(self._topics.command_results, item, result.model_dump_json())
