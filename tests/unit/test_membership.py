"""The group fence: membership confirmed around changelog appends, so that a
consumer its group evicted neither appends nor publishes its batch in flight."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.errors import KafkaConnectionError

from consumer.errors import MembershipUnknown, PartitionsLost, TransientError
from consumer.kafka.records import OutgoingRecord
from consumer.ports import MemoryStore
from consumer.service.processor import BatchProcessor
from consumer.settings import KafkaSettings, TopicSettings
from consumer.state import codec
from consumer.state.changelog import Changelog
from consumer.state.membership import GroupMembership, fenced

from .conftest import EngineFactory
from .helpers import DIMENSION, FakeEmbedder, event_dict, make_processor, make_record

NO_ERROR, ILLEGAL_GENERATION, UNKNOWN_MEMBER, REBALANCING, FENCED_INSTANCE = 0, 22, 25, 27, 82


@dataclass
class FakeCoordinator:
    """What the fence reads of aiokafka's GroupCoordinator; answers heartbeats
    with the queued error codes (NO_ERROR once they run out)."""

    answers: list[int | Exception] = field(default_factory=list)
    group_id: str = "g"
    generation: int = 3
    member_id: str = "member-1"
    asked: list[Any] = field(default_factory=list)

    async def _send_req(self, request: Any) -> Any:
        self.asked.append(request)
        answer = self.answers.pop(0) if self.answers else NO_ERROR
        if isinstance(answer, Exception):
            raise answer
        return type("HeartbeatResponse", (), {"error_code": answer})()


class FakeConsumer:
    def __init__(self, coordinator: FakeCoordinator | None) -> None:
        self._coordinator = coordinator


def bound(coordinator: FakeCoordinator | None, lease_s: float = 60.0) -> GroupMembership:
    membership = GroupMembership(lease_s=lease_s)
    membership.bind(FakeConsumer(coordinator))
    return membership


def test_the_fence_reads_what_aiokafka_s_coordinator_has() -> None:
    """The fence uses aiokafka internals: an upgrade that renames them fails here."""
    assert callable(GroupCoordinator._send_req)
    for name in ("group_id", "generation", "member_id"):
        assert name in GroupCoordinator.__init__.__code__.co_names


async def test_a_heartbeat_of_the_member_s_generation_covers_appends_for_the_lease() -> None:
    coordinator = FakeCoordinator()
    membership = bound(coordinator)
    await membership.ensure()
    await membership.ensure()
    (request,) = coordinator.asked
    assert vars(request) == {"_group": "g", "_generation_id": 3, "_member_id": "member-1"}


async def test_the_check_after_a_write_asks_even_within_the_lease() -> None:
    """A cover answers for Apache Kafka's coordinator; a broker that ends a
    generation sooner (or a member that left) is caught by asking after the write."""
    coordinator = FakeCoordinator(answers=[NO_ERROR, ILLEGAL_GENERATION])
    membership = bound(coordinator)
    written: list[str] = []

    async def write() -> None:
        written.append("points")

    with pytest.raises(PartitionsLost):
        await fenced(membership, write())
    assert written == ["points"]
    assert len(coordinator.asked) == 2


async def test_a_write_that_outlived_its_generation_is_lost_whatever_the_new_one_says() -> None:
    """Rejoined meanwhile: the new generation answers, but the partitions the
    write was for may have moved in between."""
    coordinator = FakeCoordinator()
    membership = bound(coordinator)

    async def write_while_the_group_rebalances() -> None:
        coordinator.generation += 1

    with pytest.raises(PartitionsLost, match="another generation"):
        await fenced(membership, write_while_the_group_rebalances())
    assert len(coordinator.asked) == 1  # the check before; the one after needs no answer


async def test_a_cover_holds_for_its_own_generation_only() -> None:
    coordinator = FakeCoordinator()
    membership = bound(coordinator)
    await membership.ensure()
    coordinator.generation += 1
    await membership.ensure()
    assert [request._generation_id for request in coordinator.asked] == [3, 4]


async def test_each_write_is_confirmed_for_the_generation_it_began_in() -> None:
    """Two writes on the way across a rebalance: the one begun in the old
    generation is lost, even though the other's check saw the new one."""
    coordinator = FakeCoordinator()
    membership = bound(coordinator)
    first = await membership.ensure()
    coordinator.generation += 1
    second = await membership.ensure()
    assert (first, second) == (3, 4)
    with pytest.raises(PartitionsLost, match="another generation"):
        await membership.confirm(first)
    await membership.confirm(second)


async def test_a_write_within_one_generation_passes_both_checks() -> None:
    coordinator = FakeCoordinator()
    membership = bound(coordinator)

    async def write() -> int:
        return 7

    assert await fenced(membership, write()) == 7
    assert [request._generation_id for request in coordinator.asked] == [3, 3]


async def test_an_expired_lease_asks_again() -> None:
    coordinator = FakeCoordinator()
    membership = bound(coordinator, lease_s=0.0)
    await membership.ensure()
    await membership.ensure()
    assert len(coordinator.asked) == 2


async def test_a_rebalance_under_way_confirms_the_moment_but_covers_nothing_later() -> None:
    coordinator = FakeCoordinator(answers=[REBALANCING, REBALANCING])
    membership = bound(coordinator)
    await membership.ensure()
    await membership.ensure()
    assert len(coordinator.asked) == 2


@pytest.mark.parametrize("code", [UNKNOWN_MEMBER, ILLEGAL_GENERATION, FENCED_INSTANCE])
async def test_an_evicted_or_fenced_member_has_lost_its_partitions(code: int) -> None:
    membership = bound(FakeCoordinator(answers=[code]))
    with pytest.raises(PartitionsLost):
        await membership.ensure()


async def test_a_member_aiokafka_already_reset_is_lost_without_asking() -> None:
    coordinator = FakeCoordinator(member_id="", generation=-1)
    with pytest.raises(PartitionsLost, match="rejoining"):
        await bound(coordinator).ensure()
    assert coordinator.asked == []


async def test_an_unreachable_coordinator_is_transient_not_lost() -> None:
    membership = bound(FakeCoordinator(answers=[KafkaConnectionError()]))
    with pytest.raises(MembershipUnknown) as raised:
        await membership.ensure()
    assert isinstance(raised.value, TransientError)


async def test_without_a_group_nothing_is_asked() -> None:
    await GroupMembership(lease_s=1.0).ensure()  # never bound
    await bound(None).ensure()  # a consumer outside any group


def test_the_lease_is_half_the_shorter_of_session_and_rebalance_timeouts() -> None:
    kafka = KafkaSettings(session_timeout_ms=10_000, heartbeat_interval_ms=3_000)
    assert kafka.effective_rebalance_timeout_ms == kafka.max_poll_interval_ms
    membership = GroupMembership.for_group(
        session_timeout_ms=kafka.session_timeout_ms,
        rebalance_timeout_ms=kafka.effective_rebalance_timeout_ms,
    )
    assert membership._lease_s == 5.0


class CountingPublisher:
    def __init__(self) -> None:
        self.published: list[OutgoingRecord] = []

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]:
        start = len(self.published)
        self.published.extend(records)
        return list(range(start, start + len(records)))


class ScriptedFence:
    """Answers the changelog's membership checks in order: True is a member."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.calls = 0

    async def ensure(self) -> None:
        self.calls += 1
        if not self.answers.pop(0):
            raise PartitionsLost("evicted (scripted)")

    async def confirm(self, generation: int | None) -> None:
        await self.ensure()


def changelog_with(fence: ScriptedFence, publisher: CountingPublisher) -> Changelog:
    return Changelog(
        topic="t.changelog", bootstrap_servers="unused:1", publisher=publisher, membership=fence
    )


def points(count: int) -> list[codec.RawPoint]:
    return [codec.meta_point(0, offset, DIMENSION) for offset in range(count)]


async def test_an_evicted_consumer_appends_nothing() -> None:
    publisher = CountingPublisher()
    changelog = changelog_with(ScriptedFence(False), publisher)
    with pytest.raises(PartitionsLost):
        await changelog.append(0, points(1))
    assert publisher.published == []


async def test_an_append_is_checked_again_after_it_lands() -> None:
    publisher = CountingPublisher()
    fence = ScriptedFence(True, True)
    assert await changelog_with(fence, publisher).append(0, points(2)) == 1
    assert fence.calls == 2


def processor_with(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    publisher: CountingPublisher,
    **fencing: Any,
) -> BatchProcessor:
    """A batch processor whose writes are fenced as `fencing` says (a changelog
    with its membership, or the membership of a shared store's writes)."""
    return make_processor(
        engine=make_engine(),
        store=store,
        publisher=publisher,
        topics=TopicSettings(
            accepted="t.accepted", merged="t.merged", skipped="t.skipped", dlq="t.dlq", create=False
        ),
        model_id=embedder.model_id,
        max_event_bytes=4096,
        **fencing,
    )


async def test_a_batch_whose_append_outlived_its_membership_publishes_no_decision(
    make_engine: EngineFactory, store: MemoryStore, embedder: FakeEmbedder
) -> None:
    """Evicted while its changelog append was on the way: the points may be in the
    changelog, but no decision of the batch goes out and the shard stays as it was."""
    publisher = CountingPublisher()
    processor = processor_with(
        make_engine,
        store,
        embedder,
        publisher,
        changelog=changelog_with(ScriptedFence(True, False), publisher),
        dimension=DIMENSION,
    )
    records = [
        make_record(event_dict(event_id=f"e{i}", content=text), partition=0, offset=i)
        for i, text in enumerate(["User keeps bees", "User lives in Oslo"])
    ]
    with pytest.raises(PartitionsLost):
        await processor.process(records)
    assert {record.topic for record in publisher.published} == {"t.changelog"}
    assert await store.get_decisions(0, ["e0", "e1"]) == {}
    assert await store.count_memories(partition=0) == 0


@pytest.mark.parametrize(
    ("answers", "written"),
    [((False,), False), ((True, False), True)],
    ids=["evicted-before-the-write", "evicted-during-the-write"],
)
async def test_writes_to_a_shared_store_are_fenced_too(
    make_engine: EngineFactory,
    store: MemoryStore,
    embedder: FakeEmbedder,
    answers: tuple[bool, ...],
    written: bool,
) -> None:
    """Without a changelog (a Qdrant server shared by the group) the store write
    itself is fenced: an evicted consumer writes nothing, and what it wrote while
    its eviction went unnoticed is not published."""
    publisher = CountingPublisher()
    processor = processor_with(
        make_engine, store, embedder, publisher, reconcile=True, membership=ScriptedFence(*answers)
    )
    records = [make_record(event_dict(event_id="e0", content="User keeps bees"), offset=0)]
    with pytest.raises(PartitionsLost):
        await processor.process(records)
    assert publisher.published == []
    assert (await store.count_memories(partition=0) == 1) is written
