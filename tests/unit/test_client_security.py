"""Every plain aiokafka client the project builds gets the connection security.

The aiokafka classes are replaced, in the module that uses them, by recorders that
keep their keyword arguments; no broker is contacted.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path
from typing import Any, ClassVar

import pytest
from aiokafka.errors import KafkaConnectionError

import consumer.cli.demo
import consumer.cli.produce
import consumer.cli.rebuild
import consumer.cli.replay
import consumer.kafka.topics
import consumer.state.changelog
from consumer.cli import main as cli
from consumer.cli.replay import ReplayRefused, ResetTarget, reset_offsets
from consumer.errors import ChangelogUnavailable
from consumer.kafka.security import aiokafka_kwargs
from consumer.settings import Settings, load_settings
from consumer.state.changelog import Changelog

SASL = {"sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "svc", "sasl_password": "s3cret"}
EXPECTED = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "SCRAM-SHA-512",
    "sasl_plain_username": "svc",
    "sasl_plain_password": "s3cret",
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("MEMDEDUP_"):
            monkeypatch.delenv(name)


@pytest.fixture
def settings() -> Settings:
    return load_settings(kafka={"bootstrap_servers": "kafka:9092"}, security=SASL)


class Recorder:
    """Stands in for an aiokafka client class; `fail_start` makes start() fail
    as an unreachable broker would."""

    made: ClassVar[list[dict[str, Any]]]
    fail_start: ClassVar[bool] = False

    def __init__(self, *topics: str, **kwargs: Any) -> None:
        type(self).made.append(kwargs)

    async def start(self) -> None:
        if self.fail_start:
            raise KafkaConnectionError("recorder")

    async def stop(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def subscribe(self, topics: list[str], listener: Any = None) -> None:
        pass

    # admin client
    async def list_topics(self) -> list[str]:
        return []

    async def create_topics(self, topics: list[Any]) -> None:
        pass

    # producer
    async def send(self, topic: str, value: bytes, key: bytes | None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    # consumer
    async def getmany(self, *partitions: Any, timeout_ms: int = 0) -> dict[Any, Any]:
        return {}


def recorder(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, *, fail: bool = False) -> Any:
    cls = type(name, (Recorder,), {"made": [], "fail_start": fail})
    monkeypatch.setattr(module, name, cls)
    return cls


def without_connection(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k in EXPECTED}


async def test_ensure_topics(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    admin = recorder(monkeypatch, consumer.kafka.topics, "AIOKafkaAdminClient")
    created = await consumer.kafka.topics.ensure_topics(settings)
    assert len(created) == 8
    [kwargs] = admin.made
    assert kwargs["bootstrap_servers"] == "kafka:9092"
    assert without_connection(kwargs) == EXPECTED


async def test_produce_lines(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    producer = recorder(monkeypatch, consumer.cli.produce, "AIOKafkaProducer")
    sent = await consumer.cli.produce.produce_lines(
        [b'{"tenant_id": "a", "namespace": "b"}'],
        bootstrap_servers="kafka:9092",
        topic="in",
        client_kwargs=aiokafka_kwargs(settings.security),
    )
    assert sent == 1
    [kwargs] = producer.made
    assert kwargs["acks"] == "all"
    assert without_connection(kwargs) == EXPECTED


async def test_produce_lines_defaults_to_plaintext(monkeypatch: pytest.MonkeyPatch) -> None:
    producer = recorder(monkeypatch, consumer.cli.produce, "AIOKafkaProducer")
    await consumer.cli.produce.produce_lines([b"x"], bootstrap_servers="kafka:9092", topic="in")
    assert producer.made == [
        {"bootstrap_servers": "kafka:9092", "acks": "all", "max_request_size": 1024 * 1024}
    ]


async def test_changelog_reader(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    reader = recorder(monkeypatch, consumer.state.changelog, "AIOKafkaConsumer")
    changelog = Changelog(
        topic="changes",
        bootstrap_servers="kafka:9092",
        publisher=None,  # type: ignore[arg-type]  # not used by the reader
        client_kwargs=aiokafka_kwargs(settings.security),
    )
    await changelog._consumer()
    await changelog.close()
    [kwargs] = reader.made
    assert kwargs["client_id"] == "memdedup-restore"
    assert without_connection(kwargs) == EXPECTED


async def test_changelog_reader_defaults_to_no_security_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = recorder(monkeypatch, consumer.state.changelog, "AIOKafkaConsumer", fail=True)
    changelog = Changelog(topic="changes", bootstrap_servers="kafka:9092", publisher=None)  # type: ignore[arg-type]
    with pytest.raises(ChangelogUnavailable):
        await changelog._consumer()
    assert without_connection(reader.made[0]) == {}


async def test_replay(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    group = recorder(monkeypatch, consumer.cli.replay, "AIOKafkaConsumer", fail=True)
    with pytest.raises(ReplayRefused, match="cannot reach the brokers"):
        await reset_offsets(
            settings.kafka,
            group="g",
            topic="in",
            target=ResetTarget(earliest=True),
            security=settings.security,
        )
    [kwargs] = group.made
    assert kwargs["group_id"] == "g"
    assert without_connection(kwargs) == EXPECTED


async def test_replay_defaults_to_plaintext(
    monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    group = recorder(monkeypatch, consumer.cli.replay, "AIOKafkaConsumer", fail=True)
    with pytest.raises(ReplayRefused):
        await reset_offsets(
            settings.kafka, group="g", topic="in", target=ResetTarget(earliest=True)
        )
    assert without_connection(group.made[0]) == {"security_protocol": "PLAINTEXT"}


async def test_rebuild_live_reader(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    reader = recorder(monkeypatch, consumer.cli.rebuild, "AIOKafkaConsumer", fail=True)
    with pytest.raises(KafkaConnectionError):
        await consumer.cli.rebuild.read_live_decisions(settings)
    assert without_connection(reader.made[0]) == EXPECTED


async def test_demo_collect_outputs(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    reader = recorder(monkeypatch, consumer.cli.demo, "AIOKafkaConsumer")
    assert await consumer.cli.demo.collect_outputs(settings, expected=0, timeout_s=0.1) == []
    assert without_connection(reader.made[0]) == EXPECTED


async def test_tls_context_is_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(security={"tls": True})
    admin = recorder(monkeypatch, consumer.kafka.topics, "AIOKafkaAdminClient")
    await consumer.kafka.topics.ensure_topics(settings)
    [kwargs] = admin.made
    assert kwargs["security_protocol"] == "SSL"
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)


def test_cli_produce_and_replay_pass_the_security(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in {
        "MEMDEDUP_SECURITY__SASL_MECHANISM": "SCRAM-SHA-512",
        "MEMDEDUP_SECURITY__SASL_USERNAME": "svc",
        "MEMDEDUP_SECURITY__SASL_PASSWORD": "s3cret",
    }.items():
        monkeypatch.setenv(name, value)
    calls: dict[str, dict[str, Any]] = {}

    async def fake_produce_lines(lines: Any, **kwargs: Any) -> int:
        calls["produce"] = kwargs
        return 0

    async def fake_reset_offsets(kafka: Any, **kwargs: Any) -> dict[int, int]:
        calls["replay"] = kwargs
        return {0: 0}

    monkeypatch.setattr(consumer.cli.produce, "produce_lines", fake_produce_lines)
    monkeypatch.setattr(consumer.cli.replay, "reset_offsets", fake_reset_offsets)
    events = tmp_path / "events.jsonl"
    events.write_text('{"tenant_id": "a"}\n')
    assert cli.main(["produce", str(events)]) == 0
    assert cli.main(["replay", "--group", "g", "--to-earliest"]) == 0
    assert calls["produce"]["client_kwargs"] == EXPECTED
    assert calls["replay"]["security"].security_protocol == "SASL_PLAINTEXT"
    assert calls["replay"]["security"].sasl_username == "svc"
