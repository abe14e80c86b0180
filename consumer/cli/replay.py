"""Resetting a consumer group's committed offsets so a topic is processed again.

Replaying decided events is safe: each re-emits its stored decision byte for
byte and writes nothing. The reset is done only while the group has no members,
as Kafka's own `kafka-consumer-groups --reset-offsets` does, and without joining
the group: a join would make every live member rebalance twice (when the reset
joins and when it leaves). Instead:

- the group is described (DescribeGroups): any member, live or not yet expired,
  refuses the reset, or with `wait_s` is waited out until the group is empty;
- the offsets are committed as a consumer outside the group's generations
  (generation -1, no member id), which the coordinator accepts only while the
  group is empty: a consumer that joins between the check and the commit makes
  the commit fail, and nothing is committed.

A member whose consumer was killed stays in the group until its session timeout
runs out. Some brokers (the local Tansu build) expire such members only when a
request for the group arrives and DescribeGroups is not one that does: before
each description a heartbeat under an unknown member id is sent, which every
broker answers UNKNOWN_MEMBER_ID without touching the group's live members.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import CommitFailedError, KafkaError, for_code
from aiokafka.protocol.group import HeartbeatRequest

from consumer.errors import PermanentError
from consumer.kafka.offsets import exact_end_offsets
from consumer.kafka.security import aiokafka_kwargs
from consumer.settings import KafkaSettings, SecuritySettings

# Group states without members: no group (Dead) or one with only offsets (Empty).
_INACTIVE_STATES = frozenset({"Empty", "Dead"})
# Not a member of any group: its heartbeat only makes lazy brokers expire members.
_PROBE_MEMBER_ID = "memdedup-replay-membership-probe"


class ReplayRefused(PermanentError):
    """The reset cannot be done as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ResetTarget:
    earliest: bool = False
    at: datetime | None = None
    offsets: tuple[tuple[int, int], ...] = ()

    def describe(self) -> str:
        if self.earliest:
            return "the earliest offset"
        if self.at is not None:
            return f"the first offset at or after {self.at.isoformat()}"
        return "the given offsets"


@dataclass(frozen=True, slots=True)
class GroupMembers:
    """What the group coordinator says of the group."""

    state: str
    members: int

    @property
    def empty(self) -> bool:
        return self.members == 0 and self.state in _INACTIVE_STATES

    def describe(self) -> str:
        noun = "member" if self.members == 1 else "members"
        return f"{self.members} {noun}, state {self.state}"


def parse_offset(spec: str) -> tuple[int, int]:
    """`P:O` -> (partition, offset)."""
    partition, sep, offset = spec.partition(":")
    if not sep or not partition.isdigit() or not offset.isdigit():
        raise ReplayRefused(f"--to-offset {spec!r}: expected PARTITION:OFFSET, e.g. 0:1200")
    return int(partition), int(offset)


async def describe_group(admin: Any, group: str, *, timeout_s: float = 30.0) -> GroupMembers:
    """The group's state and member count, without joining it. `admin`: a
    started AIOKafkaAdminClient. Retries while the coordinator is moving or
    loading; raises ReplayRefused on any other error."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await asyncio.wait_for(
                _describe_once(admin, group), max(0.1, deadline - time.monotonic())
            )
        except TimeoutError as exc:
            raise ReplayRefused(
                f"the coordinator of group {group!r} did not describe it within {timeout_s:g}s"
            ) from exc
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() >= deadline:
                raise ReplayRefused(
                    f"cannot describe group {group!r}: {type(exc).__name__}"
                ) from exc
            await asyncio.sleep(0.2)


async def _describe_once(admin: Any, group: str) -> GroupMembers:
    node = await admin.find_coordinator(group)
    # Only a nudge (see the module's docstring): the description is what counts.
    # `_send_request` is the admin client's own; should it go, only the nudge goes.
    with contextlib.suppress(KafkaError, AttributeError):
        await admin._send_request(
            HeartbeatRequest(group=group, generation_id=-1, member_id=_PROBE_MEMBER_ID), node
        )
    responses = await admin.describe_consumer_groups([group], group_coordinator_id=node)
    for response in responses:
        for described in response.to_object()["groups"]:
            if described["group"] != group:
                continue
            if described["error_code"]:
                raise for_code(described["error_code"])(f"describing group {group}")
            return GroupMembers(state=str(described["state"]), members=len(described["members"]))
    raise ReplayRefused(f"the coordinator's answer does not describe group {group!r}")


async def wait_until_empty(
    admin: Any,
    *,
    group: str,
    wait_s: float,
    session_timeout_ms: int,
    on_wait: Callable[[str], None] | None = None,
    timeout_s: float = 30.0,
    poll_s: float = 0.5,
) -> None:
    """Return once `group` has no members; refuse at once when it has some and
    `wait_s` is 0, else after waiting `wait_s` seconds for it to empty. `on_wait`
    gets one line saying what is waited for, before the wait."""
    members = await describe_group(admin, group, timeout_s=timeout_s)
    if members.empty:
        return
    if wait_s <= 0:
        raise ReplayRefused(
            f"group {group!r} has active members ({members.describe()}); stop its "
            "consumers (memdedup run) first, then replay. Consumers killed a moment ago "
            f"stay members for one session timeout ({session_timeout_ms} ms): "
            "pass --wait SECONDS to wait for the group to empty"
        )
    if on_wait is not None:
        on_wait(
            f"waiting up to {wait_s:g}s for group {group!r} to become empty "
            f"(now {members.describe()})"
        )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        await asyncio.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
        members = await describe_group(admin, group, timeout_s=timeout_s)
        if members.empty:
            return
    raise ReplayRefused(
        f"group {group!r} still has active members ({members.describe()}) after waiting "
        f"{wait_s:g}s: its consumers are running; stop them (memdedup run), then replay"
    )


async def reset_offsets(
    kafka: KafkaSettings,
    *,
    group: str,
    topic: str,
    target: ResetTarget,
    wait_s: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
    timeout_s: float = 30.0,
    join_timeout_s: float | None = None,
    security: SecuritySettings | None = None,
) -> dict[int, int]:
    """Commit the target offsets for every partition of `topic` in `group`;
    returns what was committed, by partition. Refused (ReplayRefused) while the
    group has members, after waiting up to `wait_s` seconds for it to empty (see
    wait_until_empty). `timeout_s` bounds reaching the brokers and each answer
    (`join_timeout_s`: its former name). `security`: the connection security of
    the clients (plaintext when None)."""
    if join_timeout_s is not None:
        timeout_s = join_timeout_s
    client_kwargs = aiokafka_kwargs(security or SecuritySettings())
    # In the group's offsets but never a member: nothing is subscribed, so this
    # consumer never joins, and its commits carry no generation.
    committer = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        client_id="memdedup-replay",
        enable_auto_commit=False,
        **client_kwargs,
    )
    admin = AIOKafkaAdminClient(
        bootstrap_servers=kafka.bootstrap_servers,
        client_id="memdedup-replay",
        request_timeout_ms=kafka.request_timeout_ms,
        **client_kwargs,
    )
    try:
        try:
            await asyncio.wait_for(committer.start(), timeout_s)
            await asyncio.wait_for(admin.start(), timeout_s)
        except (KafkaError, TimeoutError) as exc:
            raise ReplayRefused(
                f"cannot reach the brokers at {kafka.bootstrap_servers}: {type(exc).__name__}"
            ) from exc
        await wait_until_empty(
            admin,
            group=group,
            wait_s=wait_s,
            session_timeout_ms=kafka.session_timeout_ms,
            on_wait=on_wait,
            timeout_s=timeout_s,
        )
        return await _commit_targets(committer, kafka, group, topic, target, client_kwargs)
    finally:
        await admin.close()
        await committer.stop()


async def _commit_targets(
    committer: AIOKafkaConsumer,
    kafka: KafkaSettings,
    group: str,
    topic: str,
    target: ResetTarget,
    client_kwargs: dict[str, Any],
) -> dict[int, int]:
    partitions = committer.partitions_for_topic(topic)
    if not partitions:
        await committer.topics()
        partitions = committer.partitions_for_topic(topic)
    if not partitions:
        raise ReplayRefused(f"topic {topic!r} does not exist on {kafka.bootstrap_servers}")
    everything = sorted(TopicPartition(topic, p) for p in partitions)
    committer.assign(everything)
    reader = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers, enable_auto_commit=False, **client_kwargs
    )
    await reader.start()
    try:
        wanted = await _target_offsets(committer, reader, everything, target)
    finally:
        await reader.stop()
    try:
        await committer.commit(wanted)
    except CommitFailedError as exc:
        raise ReplayRefused(
            f"a consumer joined group {group!r} while its offsets were being reset; "
            "nothing was committed: stop its consumers (memdedup run), then replay"
        ) from exc
    return {tp.partition: offset for tp, offset in wanted.items()}


async def _target_offsets(
    consumer: AIOKafkaConsumer,
    reader: AIOKafkaConsumer,
    partitions: list[TopicPartition],
    target: ResetTarget,
) -> dict[TopicPartition, int]:
    beginning = await consumer.beginning_offsets(partitions)
    end = await exact_end_offsets(reader, partitions)
    if target.earliest:
        return dict(beginning)
    if target.at is not None:
        stamp = int(target.at.timestamp() * 1000)
        found = await consumer.offsets_for_times({tp: stamp for tp in partitions})
        return {tp: found[tp].offset if found.get(tp) else end[tp] for tp in partitions}
    wanted: dict[TopicPartition, int] = {}
    by_number = {tp.partition: tp for tp in partitions}
    for partition, offset in target.offsets:
        tp = by_number.get(partition)
        if tp is None:
            raise ReplayRefused(f"partition {partition} does not exist (have {sorted(by_number)})")
        if not beginning[tp] <= offset <= end[tp]:
            raise ReplayRefused(
                f"offset {offset} of partition {partition} is outside {beginning[tp]}..{end[tp]}"
            )
        wanted[tp] = offset
    return wanted
