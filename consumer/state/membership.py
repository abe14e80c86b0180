"""Is this consumer still a member of its group's current generation?

The fence around writes of state the group shares: changelog appends, and the
writes of a store shared by the group (no changelog). A consumer the group has
evicted (a stall longer than the session timeout, a rebalance it did not rejoin
in time) keeps running its batch in flight, while the group hands its partitions
to another consumer that restores the shard from the changelog and decides the
same events again. Were the evicted one to append and publish after that
restore, the same event would get two different decisions and its points would
shadow the new owner's. Kafka fences such zombies only for transactional producers, which not
every broker offers; this check asks the group coordinator instead, with a
heartbeat of the consumer's own generation, around each such write:

- before it, unless a recent answer still covers it: an evicted consumer
  appends nothing;
- after it, always, with the generation the write began in: a member answered
  once the write has landed was a member while it landed, so the write precedes
  any new generation, hence any restore by a next owner, and its decisions may
  be published.

A heartbeat answered at time t keeps the member in the group until t plus the
session timeout (no eviction without a missed session) and, in a rebalance,
until it rejoins or the rebalance timeout ends; `lease_s` stays well inside both.
That holds for Apache Kafka's coordinator, but not for every broker speaking its
protocol (nor for a member that left the group while its write was on the way),
so the cover only spares the check before a write: the check after it is what
decides whether its decisions go out, and it is never taken from a cover.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import structlog
from aiokafka import AIOKafkaConsumer
from aiokafka import errors as kafka_errors
from aiokafka.protocol.group import HeartbeatRequest

from consumer.errors import MembershipUnknown, PartitionsLost
from consumer.ports import MembershipFence

log = structlog.get_logger(__name__)

T = TypeVar("T")

# Answers that say it is not: evicted, behind a newer generation, or fenced by a
# newer instance of the same static member (error 82, unnamed in aiokafka).
_NOT_MEMBER = (kafka_errors.UnknownMemberIdError, kafka_errors.IllegalGenerationError)
_FENCED_INSTANCE_ID = 82


class GroupMembership:
    """Confirms membership with the group coordinator of the bound consumer.

    Unbound (no consumer group: tests, tools) it confirms nothing and never fails.
    """

    def __init__(self, *, lease_s: float) -> None:
        self._lease_s = lease_s
        self._consumer: AIOKafkaConsumer | None = None
        # Monotonic time until which the last answer covers an append.
        self._covered_until = 0.0
        self._covered_generation: int | None = None
        self.confirmations = 0

    @classmethod
    def for_group(cls, *, session_timeout_ms: int, rebalance_timeout_ms: int) -> GroupMembership:
        # Half the shorter of the two: room for the heartbeat's own round trip.
        return cls(lease_s=min(session_timeout_ms, rebalance_timeout_ms) / 2_000)

    def bind(self, consumer: AIOKafkaConsumer) -> None:
        if consumer is not self._consumer:
            self._consumer = consumer
            self._covered_until = 0.0

    async def ensure(self) -> int | None:
        """Before a write: return the generation this consumer is a member of (now,
        or covered by a recent answer), None outside a group; raise PartitionsLost
        if not a member, MembershipUnknown if the coordinator cannot say."""
        coordinator = self._coordinator()
        if coordinator is None:
            return None
        generation: int = coordinator.generation
        if time.monotonic() >= self._covered_until or generation != self._covered_generation:
            await self._confirm(coordinator, generation)
        return generation

    async def confirm(self, generation: int | None) -> None:
        """After a write: ask the coordinator now (no cover counts) whether this
        consumer is still a member of `generation`, the one `ensure` returned
        before the write: a rejoin meanwhile is no membership the write had."""
        coordinator = self._coordinator()
        if coordinator is None or generation is None:
            return
        if coordinator.generation != generation:
            log.warning(
                "group_generation_moved", during_write=generation, now=coordinator.generation
            )
            raise PartitionsLost("the group moved to another generation during the write")
        await self._confirm(coordinator, generation)

    def _coordinator(self) -> Any:
        coordinator: Any = getattr(self._consumer, "_coordinator", None)
        send = getattr(coordinator, "_send_req", None)
        if coordinator is None or send is None or not hasattr(coordinator, "generation"):
            # Not in a group (unbound, manual assignment), or an aiokafka without
            # these internals: nothing to ask (tests/unit/test_membership.py pins them).
            return None
        return coordinator

    async def _confirm(self, coordinator: Any, generation: int) -> None:
        send = coordinator._send_req
        member_id = coordinator.member_id
        if not member_id or generation < 0:
            # aiokafka itself learnt of the eviction and is rejoining.
            raise PartitionsLost("this consumer is rejoining its group")
        asked_at = time.monotonic()
        try:
            response = await send(HeartbeatRequest(coordinator.group_id, generation, member_id))
        except kafka_errors.KafkaError as exc:
            raise MembershipUnknown(f"group coordinator: {type(exc).__name__}") from exc
        self.confirmations += 1
        error = kafka_errors.for_code(response.error_code)
        if error is kafka_errors.NoError:
            self._covered_until = asked_at + self._lease_s
            self._covered_generation = generation
            return
        if error is kafka_errors.RebalanceInProgressError:
            # A member now (were its generation over, or the member gone, the
            # answer would say so), but the rebalance may end any moment: this
            # covers nothing later.
            self._covered_until = asked_at
            return
        if error in _NOT_MEMBER or response.error_code == _FENCED_INSTANCE_ID:
            log.warning("group_membership_lost", error=error.__name__, generation=generation)
            raise PartitionsLost(f"the group coordinator answered {error.__name__}")
        raise MembershipUnknown(f"group coordinator answered {error.__name__}")


async def fenced(fence: MembershipFence | None, write: Awaitable[T]) -> T:
    """Run a write of shared state (a changelog append, a shared store's write)
    between two membership checks: nothing is written by a consumer already
    evicted, and nothing written is acted on by one evicted meanwhile (the
    second check always asks the coordinator)."""
    if fence is None:
        return await write
    try:
        generation = await fence.ensure()
    except BaseException:
        if hasattr(write, "close"):
            write.close()  # a coroutine never started: no "never awaited" warning
        raise
    result = await write
    await fence.confirm(generation)
    return result
