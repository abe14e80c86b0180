"""Optional OpenTelemetry tracing: FastStream's Kafka middleware, off by default.

`tracing_middlewares(settings)` is what `KafkaBroker(..., middlewares=...)` takes:
no middleware unless `MEMDEDUP_TRACING__ENABLED=true`; then one
KafkaTelemetryMiddleware (a span per consumed batch and per publish, W3C trace
context carried in the record headers) with its own tracer provider, exporting to
an OTLP/HTTP collector (`exporter: otlp`, `endpoint`) or to stdout
(`exporter: console`).

The OpenTelemetry packages are the optional `tracing` extra, imported only when
tracing is enabled; enabling it without them stops start-up with the pip command.
"""

from __future__ import annotations

from typing import Any

from consumer.settings import ConfigError, Settings, TracingSettings

PIP_COMMAND = (
    "pip install 'memdedup[tracing]' "
    "(or: pip install 'opentelemetry-sdk>=1.24,<2' 'opentelemetry-exporter-otlp-proto-http>=1.24,<2')"
)


class TracingUnavailable(ConfigError, RuntimeError):
    """Tracing is enabled but its packages are not installed."""


def _missing(exc: ImportError, what: str) -> TracingUnavailable:
    return TracingUnavailable(
        f"tracing.enabled is set but {what} is not installed ({exc.name or exc}): "
        f"{PIP_COMMAND}, or unset MEMDEDUP_TRACING__ENABLED"
    )


def tracing_middlewares(settings: Settings) -> list[Any]:
    """FastStream broker middlewares for the tracing settings: [] when disabled."""
    tracing = settings.tracing
    if not tracing.enabled:
        return []
    try:
        from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise _missing(exc, "the OpenTelemetry SDK") from exc
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: tracing.service_name}))
    provider.add_span_processor(_span_processor(tracing))
    # A provider of its own, not the global one: nothing else in the process is
    # affected, and two apps in one process (tests) do not clash.
    return [KafkaTelemetryMiddleware(tracer_provider=provider)]


def _span_processor(tracing: TracingSettings) -> Any:
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    if tracing.exporter == "console":
        return SimpleSpanProcessor(ConsoleSpanExporter(service_name=tracing.service_name))
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise _missing(exc, "the OTLP exporter") from exc
    return BatchSpanProcessor(OTLPSpanExporter(endpoint=tracing.endpoint))
