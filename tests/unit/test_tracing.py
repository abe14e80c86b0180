"""Optional OpenTelemetry tracing (consumer.observability.tracing): off by default."""

from __future__ import annotations

import builtins
import importlib.util
import os
from typing import Any

import pytest

from consumer.observability.tracing import tracing_middlewares
from consumer.settings import ConfigError, load_settings

HAVE_OTEL = (
    importlib.util.find_spec("opentelemetry") is not None
    and importlib.util.find_spec("opentelemetry.sdk") is not None
)
needs_otel = pytest.mark.skipif(
    not HAVE_OTEL,
    reason="opentelemetry-sdk not installed: pip install 'memdedup[tracing]'",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("MEMDEDUP_"):
            monkeypatch.delenv(name)


def test_disabled_by_default() -> None:
    settings = load_settings()
    assert settings.tracing.enabled is False
    assert settings.tracing.exporter == "otlp"
    assert settings.tracing.service_name == "memdedup"
    assert tracing_middlewares(settings) == []


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_TRACING__ENABLED", "true")
    monkeypatch.setenv("MEMDEDUP_TRACING__EXPORTER", "console")
    monkeypatch.setenv("MEMDEDUP_TRACING__ENDPOINT", "http://collector:4318/v1/traces")
    tracing = load_settings().tracing
    assert (tracing.enabled, tracing.exporter) == (True, "console")
    assert tracing.endpoint == "http://collector:4318/v1/traces"
    monkeypatch.setenv("MEMDEDUP_TRACING__EXPORTER", "zipkin")
    with pytest.raises(ConfigError, match="MEMDEDUP_TRACING__EXPORTER"):
        load_settings()


@needs_otel
def test_console_exporter_gives_one_kafka_middleware() -> None:
    from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware

    settings = load_settings(tracing={"enabled": True, "exporter": "console"})
    [middleware] = tracing_middlewares(settings)
    assert isinstance(middleware, KafkaTelemetryMiddleware)


@needs_otel
def test_otlp_exporter_gives_one_kafka_middleware() -> None:
    pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        reason="opentelemetry-exporter-otlp-proto-http not installed",
    )
    from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware

    settings = load_settings(
        tracing={"enabled": True, "endpoint": "http://127.0.0.1:1/v1/traces", "service_name": "x"}
    )
    [middleware] = tracing_middlewares(settings)
    assert isinstance(middleware, KafkaTelemetryMiddleware)


@needs_otel
def test_middleware_is_accepted_by_the_broker() -> None:
    from faststream.kafka import KafkaBroker

    settings = load_settings(tracing={"enabled": True, "exporter": "console"})
    broker = KafkaBroker("127.0.0.1:1", middlewares=tracing_middlewares(settings))
    assert len(broker.middlewares) >= 1


def test_enabled_without_the_packages_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def no_opentelemetry(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(("opentelemetry", "faststream.kafka.opentelemetry")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_opentelemetry)
    settings = load_settings(tracing={"enabled": True, "exporter": "console"})
    with pytest.raises(RuntimeError, match=r"pip install 'memdedup\[tracing\]'") as raised:
        tracing_middlewares(settings)
    assert isinstance(raised.value, ConfigError)
