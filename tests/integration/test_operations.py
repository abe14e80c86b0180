"""Metrics and health over HTTP, against a consumer on the real broker."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from consumer.app.factory import create_app
from consumer.app.runtime import runtime_of
from tests.integration.harness import StoreFactory, event, make_settings, produce, read_outputs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def test_metrics_and_health_endpoints_of_a_running_consumer(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory("edge", settings)
    app = create_app(settings, embedder=real_embedder, store=await stores.open())
    await app.start()
    try:
        port = runtime_of(app).health.port  # type: ignore[union-attr]
        assert (await asyncio.to_thread(get, port, "/healthz"))[0] == 200
        status, body = await asyncio.to_thread(get, port, "/readyz")
        assert status == 200, body
        await produce(
            settings,
            [
                event("m1", "User keeps bees on the roof"),
                event("m2", "user keeps bees on the roof"),
                b"not json",
            ],
        )
        await read_outputs(settings, at_least=3)
        await asyncio.sleep(0.5)
        status, text = await asyncio.to_thread(get, port, "/metrics")
        assert status == 200
        assert 'memdedup_decisions_total{decision="accepted",reason="new"} 1.0' in text
        assert 'memdedup_dead_letters_total{error_code="invalid_json"} 1.0' in text
        assert "dedup_check_duration_ms_bucket" in text
        assert "memdedup_batch_size_count" in text
    finally:
        await app.stop()
        await stores.close()
    # Stopped: nothing listens any more.
    with pytest.raises(urllib.error.URLError, match="refused"):
        await asyncio.to_thread(get, port, "/healthz")


async def test_readiness_fails_while_the_store_is_held_elsewhere(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    from consumer.chaos.store import OutageSwitchStore

    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory("edge", settings)
    outage = tmp_path / "outage"
    store = OutageSwitchStore(await stores.open(), outage_file=outage)
    app = create_app(settings, embedder=real_embedder, store=store)
    await app.start()
    try:
        port = runtime_of(app).health.port  # type: ignore[union-attr]
        assert (await asyncio.to_thread(get, port, "/readyz"))[0] == 200
        outage.touch()
        status, body = await asyncio.to_thread(get, port, "/readyz")
        assert status == 503
        assert "store" in json.dumps(body)
        outage.unlink()
        assert (await asyncio.to_thread(get, port, "/readyz"))[0] == 200
    finally:
        await app.stop()
        await stores.close()
