"""Partition handover: what a consumer gives up when the group revokes its partitions."""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from aiokafka import ConsumerRebalanceListener, TopicPartition

from .runtime import Runtime

log = structlog.get_logger(__name__)


class PartitionHandover(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        service = self._runtime.service
        mine = [tp.partition for tp in revoked if tp.topic == self._runtime.input_topic]
        if service is not None and mine:
            log.info("partitions_revoked", partitions=sorted(mine))
            await service.release(mine)
        if mine:
            if self._runtime.progress is not None:
                self._runtime.progress.revoked(mine)
            if self._runtime.publisher is not None:
                self._runtime.publisher.ledger.forget(mine)

    async def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        log.info("partitions_assigned", partitions=sorted(tp.partition for tp in assigned))
