"""The replay's membership check and `--wait`, against a stand-in admin client.

The same behaviour against the real local broker: tests/integration/test_replay_membership.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import pytest
from aiokafka.errors import KafkaConnectionError

import consumer.cli.replay
from consumer.cli.replay import ReplayRefused, ResetTarget, reset_offsets, wait_until_empty
from consumer.settings import KafkaSettings, SecuritySettings


class Described:
    def __init__(self, group: str, state: str, members: int, error_code: int = 0) -> None:
        self._group = {
            "error_code": error_code,
            "group": group,
            "state": state,
            "protocol_type": "consumer",
            "protocol": "",
            "members": [{"member_id": f"m{i}"} for i in range(members)],
        }

    def to_object(self) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "groups": [self._group]}


class FakeAdmin:
    """Answers DescribeGroups from a script of (state, members); records what it is sent."""

    def __init__(self, group: str, answers: Iterable[tuple[str, int]]) -> None:
        self.group = group
        self.answers = list(answers)
        self.described = 0
        self.sent: list[Any] = []

    async def find_coordinator(self, group: str) -> int:
        return 1

    async def _send_request(self, request: Any, node_id: int) -> None:
        self.sent.append(request)

    async def describe_consumer_groups(
        self, group_ids: list[str], group_coordinator_id: int | None = None
    ) -> list[Described]:
        state, members = self.answers[min(self.described, len(self.answers) - 1)]
        self.described += 1
        return [Described(self.group, state, members)]


async def check(admin: FakeAdmin, wait_s: float) -> list[str]:
    lines: list[str] = []
    await wait_until_empty(
        admin,
        group=admin.group,
        wait_s=wait_s,
        session_timeout_ms=10_000,
        on_wait=lines.append,
        poll_s=0.01,
    )
    return lines


@pytest.mark.parametrize("state", ["Empty", "Dead"])
async def test_an_empty_group_proceeds_without_waiting(state: str) -> None:
    admin = FakeAdmin("g", [(state, 0)])
    assert await check(admin, wait_s=0) == []
    assert admin.described == 1


async def test_members_refuse_at_once_without_wait() -> None:
    admin = FakeAdmin("g", [("Stable", 2), ("Empty", 0)])
    with pytest.raises(ReplayRefused) as refused:
        await check(admin, wait_s=0)
    message = str(refused.value)
    assert "'g' has active members (2 members, state Stable)" in message
    assert "10000 ms" in message
    assert "--wait SECONDS" in message
    assert admin.described == 1


async def test_wait_says_once_what_it_waits_for_and_proceeds_when_empty() -> None:
    admin = FakeAdmin("g", [("Stable", 1), ("Stable", 1), ("PreparingRebalance", 0), ("Empty", 0)])
    lines = await check(admin, wait_s=5)
    assert lines == ["waiting up to 5s for group 'g' to become empty (now 1 member, state Stable)"]
    assert admin.described == 4


async def test_wait_refuses_when_the_group_stays_busy() -> None:
    admin = FakeAdmin("g", [("Stable", 3)])
    with pytest.raises(
        ReplayRefused, match=r"still has active members \(3 members.*after waiting 0\.2s"
    ):
        await check(admin, wait_s=0.2)
    assert admin.described > 2


async def test_each_check_nudges_the_coordinator_with_a_non_member_heartbeat() -> None:
    admin = FakeAdmin("g", [("Stable", 1), ("Empty", 0)])
    await check(admin, wait_s=5)
    assert len(admin.sent) == admin.described == 2
    assert {type(request).__name__ for request in admin.sent} == {"HeartbeatRequest"}
    assert all(request._member_id == consumer.cli.replay._PROBE_MEMBER_ID for request in admin.sent)


async def test_a_group_error_is_refused_with_its_name() -> None:
    class Unauthorized(FakeAdmin):
        async def describe_consumer_groups(
            self, group_ids: list[str], group_coordinator_id: int | None = None
        ) -> list[Described]:
            return [Described(self.group, "", 0, error_code=30)]

    with pytest.raises(ReplayRefused, match="GroupAuthorizationFailedError"):
        await check(Unauthorized("g", []), wait_s=0)


class StartedConsumer:
    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass


class UnreachableAdmin:
    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        type(self).made.append(kwargs)

    async def start(self) -> None:
        raise KafkaConnectionError("unreachable")

    async def close(self) -> None:
        pass


async def test_the_admin_client_gets_the_connection_security(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consumer.cli.replay, "AIOKafkaConsumer", lambda **kwargs: StartedConsumer())
    monkeypatch.setattr(consumer.cli.replay, "AIOKafkaAdminClient", UnreachableAdmin)
    security = SecuritySettings(
        sasl_mechanism="SCRAM-SHA-512", sasl_username="svc", sasl_password="s3cret"
    )
    with pytest.raises(ReplayRefused, match="cannot reach the brokers"):
        await reset_offsets(
            KafkaSettings(bootstrap_servers="kafka:9092"),
            group="g",
            topic="in",
            target=ResetTarget(earliest=True),
            security=security,
        )
    [kwargs] = UnreachableAdmin.made
    assert kwargs["security_protocol"] == "SASL_PLAINTEXT"
    assert kwargs["sasl_plain_username"] == "svc"
