"""The operations HTTP server over real HTTP on a loopback port, and the metrics it serves."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from consumer.errors import (
    EmbedderUnavailable,
    MembershipUnknown,
    PublishFailed,
    StoreUnavailable,
)
from consumer.observability.health import HealthServer, succeeds
from consumer.observability.metrics import ServiceMetrics, TimedEmbedder, component_of, hit_rate

from .helpers import FakeEmbedder


def _get(port: int, path: str, method: str = "GET") -> tuple[int, str, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


async def get(port: int, path: str, method: str = "GET") -> tuple[int, str, str]:
    return await asyncio.to_thread(_get, port, path, method)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Sample name and sorted labels -> value, from the Prometheus text format."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.fixture
def metrics() -> ServiceMetrics:
    return ServiceMetrics()


@pytest.fixture
async def server(metrics: ServiceMetrics) -> AsyncIterator[HealthServer]:
    health = HealthServer(metrics, "127.0.0.1", 0, readiness_timeout_s=0.5)
    await health.start()
    try:
        yield health
    finally:
        await health.stop()


async def test_binds_an_ephemeral_port(server: HealthServer) -> None:
    assert server.port > 0


async def test_healthz_is_ok_while_alive(server: HealthServer) -> None:
    status, content_type, body = await get(server.port, "/healthz")
    assert status == 200
    assert content_type == "application/json"
    assert json.loads(body) == {"status": "ok"}


async def test_unknown_path_and_method(server: HealthServer) -> None:
    assert (await get(server.port, "/nope"))[0] == 404
    assert (await get(server.port, "/healthz", method="POST"))[0] == 405
    status, _, body = await get(server.port, "/healthz", method="HEAD")
    assert status == 200
    assert body == ""


async def test_metrics_exposes_every_metric_in_prometheus_format(
    server: HealthServer, metrics: ServiceMetrics
) -> None:
    status, content_type, body = await get(server.port, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    families = {f.name for f in text_string_to_metric_families(body)}
    # Unlabelled metrics are exposed from the start.
    for name in (
        "dedup_cache_size",
        "dedup_cache_hit_rate",
        "memdedup_rerouted",
        "memdedup_batch_size",
        "memdedup_embed_seconds",
        "memdedup_store_seconds",
        "memdedup_backoff_active",
        "memdedup_poison_records",
        "memdedup_abandoned_batches",
        "memdedup_degraded_decisions",
    ):
        assert name in families, name


async def test_metric_values_after_service_calls(
    server: HealthServer, metrics: ServiceMetrics
) -> None:
    metrics.observe_decision(
        "prefs",
        "skipped",
        "semantic",
        similarity=0.97,
        checks=[("exact", False, 1.0), ("recent", False, 0.5), ("semantic", True, 20.0)],
    )
    metrics.observe_decision("prefs", "skipped", "exact", checks=[("exact", True, 1.0)])
    metrics.observe_decision(
        "prefs",
        "accepted",
        "new",
        similarity=0.9,
        checks=[("semantic", False, 12.0)],
        guard="numbers",
    )
    metrics.observe_decision("bio", "merged", "semantic", similarity=0.88)
    metrics.observe_dead_letter("invalid_json")
    metrics.observe_dead_letters({"schema_violation": 2, "too_large": 0})
    metrics.observe_batch(5, embed_s=0.02, store_s=0.004)
    metrics.set_cache(42, hit_rate(3, 1))
    metrics.set_lag(0, 7)
    metrics.set_lag(3, -1)
    metrics.retry(component_of(StoreUnavailable("down")))
    metrics.retry(component_of(StoreUnavailable("down")))
    metrics.retry(component_of(EmbedderUnavailable("oom")))
    metrics.retry(component_of(MembershipUnknown("coordinator gone")))
    metrics.abandoned()
    metrics.set_backoff(True)
    metrics.rerouted(2)
    metrics.poisoned()
    metrics.degraded()

    _, _, body = await get(server.port, "/metrics")
    s = samples(body)
    assert s[("dedup_checks_total", (("namespace", "prefs"), ("result", "duplicate")))] == 2
    assert s[("dedup_checks_total", (("namespace", "prefs"), ("result", "unique")))] == 1
    assert s[("dedup_checks_total", (("namespace", "bio"), ("result", "duplicate")))] == 1
    assert s[("dedup_skipped_total", (("namespace", "prefs"), ("reason", "semantic")))] == 1
    assert s[("dedup_skipped_total", (("namespace", "prefs"), ("reason", "exact")))] == 1
    assert ("dedup_skipped_total", (("namespace", "bio"), ("reason", "semantic"))) not in s
    assert s[("dedup_check_duration_ms_count", (("check_type", "exact"),))] == 2
    assert s[("dedup_check_duration_ms_count", (("check_type", "semantic"),))] == 2
    assert s[("dedup_check_duration_ms_count", (("check_type", "total"),))] == 3
    assert s[("dedup_check_duration_ms_sum", (("check_type", "total"),))] == pytest.approx(34.5)
    assert s[("dedup_similarity_score_count", (("namespace", "prefs"),))] == 2
    assert s[("dedup_similarity_score_bucket", (("le", "0.96"), ("namespace", "prefs")))] == 1
    assert s[("dedup_cache_size", ())] == 42
    assert s[("dedup_cache_hit_rate", ())] == 0.75
    assert s[("memdedup_decisions_total", (("decision", "skipped"), ("reason", "exact")))] == 1
    assert s[("memdedup_decisions_total", (("decision", "merged"), ("reason", "semantic")))] == 1
    assert s[("memdedup_dead_letters_total", (("error_code", "invalid_json"),))] == 1
    assert s[("memdedup_dead_letters_total", (("error_code", "schema_violation"),))] == 2
    assert ("memdedup_dead_letters_total", (("error_code", "too_large"),)) not in s
    assert s[("memdedup_batch_size_sum", ())] == 5
    assert s[("memdedup_embed_seconds_count", ())] == 1
    assert s[("memdedup_store_seconds_sum", ())] == pytest.approx(0.004)
    assert s[("memdedup_consumer_lag", (("partition", "0"),))] == 7
    assert s[("memdedup_consumer_lag", (("partition", "3"),))] == 0
    assert s[("memdedup_transient_retries_total", (("component", "store"),))] == 2
    assert s[("memdedup_transient_retries_total", (("component", "model"),))] == 1
    assert s[("memdedup_backoff_active", ())] == 1
    assert s[("memdedup_rerouted_total", ())] == 2
    assert s[("memdedup_poison_records_total", ())] == 1
    assert s[("memdedup_abandoned_batches_total", ())] == 1
    assert s[("memdedup_transient_retries_total", (("component", "broker"),))] == 1
    assert s[("memdedup_guard_vetoes_total", (("guard", "numbers"),))] == 1
    assert s[("memdedup_degraded_decisions_total", ())] == 1

    metrics.set_backoff(False)
    metrics.clear_lag([0, 5])
    _, _, body = await get(server.port, "/metrics")
    s = samples(body)
    assert s[("memdedup_backoff_active", ())] == 0
    assert ("memdedup_consumer_lag", (("partition", "0"),)) not in s
    assert s[("memdedup_consumer_lag", (("partition", "3"),))] == 0


async def test_registries_are_independent() -> None:
    first, second = ServiceMetrics(), ServiceMetrics()
    first.poisoned()
    assert b"memdedup_poison_records_total 1.0" in first.render()
    assert b"memdedup_poison_records_total 0.0" in second.render()


async def test_readiness_flips_with_its_checks(server: HealthServer) -> None:
    status, _, body = await get(server.port, "/readyz")
    assert status == 200, "no checks registered: ready"

    state = {"model": False, "store": True}

    async def model_loaded() -> bool:
        return state["model"]

    async def store_reachable() -> bool:
        return state["store"]

    server.add_readiness_check("model", model_loaded)
    server.add_readiness_check("store", store_reachable)
    status, content_type, body = await get(server.port, "/readyz")
    assert status == 503
    assert content_type == "application/json"
    assert json.loads(body) == {"status": "not_ready", "failing": ["model"]}

    state["model"] = True
    status, _, body = await get(server.port, "/readyz")
    assert status == 200
    assert json.loads(body) == {"status": "ready", "checks": ["model", "store"]}

    state["store"] = False
    status, _, body = await get(server.port, "/readyz")
    assert status == 503
    assert json.loads(body)["failing"] == ["store"]
    # Liveness does not depend on readiness.
    assert (await get(server.port, "/healthz"))[0] == 200


async def test_raising_or_slow_checks_fail_readiness(server: HealthServer) -> None:
    async def broken() -> None:
        raise StoreUnavailable("connection refused")

    async def slow() -> bool:
        await asyncio.sleep(10)
        return True

    server.add_readiness_check("store", succeeds(broken))
    server.add_readiness_check("broker", slow)
    status, _, body = await get(server.port, "/readyz")
    assert status == 503
    assert sorted(json.loads(body)["failing"]) == ["broker", "store"]

    async def fine() -> None:
        return None

    server.add_readiness_check("store", succeeds(fine))
    server.remove_readiness_check("broker")
    assert (await get(server.port, "/readyz"))[0] == 200


async def test_malformed_request_does_not_break_the_server(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"NONSENSE\r\n\r\n")
    await writer.drain()
    reply = await reader.read()
    writer.close()
    await writer.wait_closed()
    assert reply.startswith(b"HTTP/1.1 400")
    assert (await get(server.port, "/healthz"))[0] == 200


async def test_stop_releases_the_port(metrics: ServiceMetrics) -> None:
    health = HealthServer(metrics, "127.0.0.1", 0)
    async with health:
        port = health.port
        assert (await get(port, "/healthz"))[0] == 200
    with pytest.raises(urllib.error.URLError, match="refused"):
        await asyncio.to_thread(_get, port, "/healthz")


async def test_timed_embedder_observes_each_call(metrics: ServiceMetrics) -> None:
    timed = TimedEmbedder(FakeEmbedder(), metrics)
    await timed.embed(["one", "two"])
    await timed.embed(["three"])
    s = samples(metrics.render().decode())
    assert s[("memdedup_embed_seconds_count", ())] == 2
    assert timed.dimension == timed.inner.dimension


def test_component_labels() -> None:
    assert component_of(PublishFailed("x")) == "broker"
    assert component_of(RuntimeError("x")) == "other"
