"""The operations HTTP server: GET /metrics, /healthz, /readyz on one port.

A deliberately small HTTP/1.1 server on asyncio streams (one request per
connection), so the consumer needs no web framework:

- `/metrics`: the ServiceMetrics registry in the Prometheus text format;
- `/healthz`: 200 while the event loop answers (liveness);
- `/readyz`: 200 when every readiness check returns True within the timeout,
  else 503 with `{"status": "not_ready", "failing": [names]}` (readiness).

Readiness checks are async callables returning bool; one that raises or times
out counts as failing. They run concurrently on each /readyz request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Final

import structlog

from consumer.observability.metrics import CONTENT_TYPE, ServiceMetrics

log = structlog.get_logger(__name__)

ReadinessCheck = Callable[[], Awaitable[bool]]

_MAX_REQUEST_HEAD: Final = 8192
_READ_TIMEOUT_S: Final = 5.0
_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_JSON: Final = "application/json"


class HealthServer:
    """Serves metrics, liveness and readiness. `port=0` binds a free port; read
    the bound one from `port` after `start()`."""

    def __init__(
        self,
        metrics: ServiceMetrics,
        host: str = "0.0.0.0",  # noqa: S104  (reachable by the kubelet and Prometheus)
        port: int = 9464,
        *,
        readiness_timeout_s: float = 2.0,
    ) -> None:
        self._metrics = metrics
        self._host = host
        self._requested_port = port
        self._readiness_timeout_s = readiness_timeout_s
        self._checks: dict[str, ReadinessCheck] = {}
        self._server: asyncio.Server | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port (the requested one before `start()`)."""
        return self._port if self._port is not None else self._requested_port

    @property
    def host(self) -> str:
        return self._host

    def add_readiness_check(self, name: str, check: ReadinessCheck) -> None:
        """Register (or replace) a named check; /readyz fails while it returns False."""
        self._checks[name] = check

    def remove_readiness_check(self, name: str) -> None:
        self._checks.pop(name, None)

    async def start(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(self._handle, self._host, self._requested_port)
        sockets = self._server.sockets
        self._port = int(sockets[0].getsockname()[1]) if sockets else self._requested_port
        log.info("http_server_started", host=self._host, port=self._port)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        await server.wait_closed()
        log.info("http_server_stopped", port=self._port)

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def readiness(self) -> tuple[bool, list[str]]:
        """(ready, names of the failing checks)."""
        names = list(self._checks)
        results = await asyncio.gather(*(self._run_check(self._checks[n]) for n in names))
        failing = [name for name, ok in zip(names, results, strict=True) if not ok]
        return not failing, failing

    async def _run_check(self, check: ReadinessCheck) -> bool:
        try:
            async with asyncio.timeout(self._readiness_timeout_s):
                return bool(await check())
        except Exception:  # a failing check is an answer, not a server error
            return False

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(_READ_TIMEOUT_S):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return
            if len(head) > _MAX_REQUEST_HEAD:
                await _respond(writer, 400, b"request too large\n", "text/plain", head_only=False)
                return
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = request_line.split(" ")
            if len(parts) != 3:
                await _respond(writer, 400, b"bad request\n", "text/plain", head_only=False)
                return
            method, target, _version = parts
            path = target.split("?", 1)[0]
            head_only = method == "HEAD"
            if method not in ("GET", "HEAD"):
                await _respond(writer, 405, b"method not allowed\n", "text/plain", head_only)
                return
            status, body, content_type = await self._route(path)
            await _respond(writer, status, body, content_type, head_only)
        except (ConnectionError, OSError):
            pass
        except Exception:
            log.exception("http_request_failed")
            with contextlib.suppress(Exception):
                await _respond(writer, 500, b"internal error\n", "text/plain", head_only=False)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _route(self, path: str) -> tuple[int, bytes, str]:
        if path == "/metrics":
            return 200, self._metrics.render(), CONTENT_TYPE
        if path in ("/healthz", "/livez"):
            return 200, _json({"status": "ok"}), _JSON
        if path == "/readyz":
            ready, failing = await self.readiness()
            if ready:
                return 200, _json({"status": "ready", "checks": sorted(self._checks)}), _JSON
            return 503, _json({"status": "not_ready", "failing": failing}), _JSON
        return 404, b"not found\n", "text/plain"


def succeeds(operation: Callable[[], Awaitable[object]]) -> ReadinessCheck:
    """A readiness check that passes when `operation` returns without raising
    (e.g. `succeeds(store.ping)`)."""

    async def check() -> bool:
        await operation()
        return True

    return check


def _json(value: object) -> bytes:
    return (json.dumps(value) + "\n").encode()


async def _respond(
    writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str, head_only: bool
) -> None:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    writer.write(head if head_only else head + body)
    await writer.drain()
