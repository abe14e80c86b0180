"""The package as a wheel installs it (and as the image installs it), not the
editable checkout: every packaged file is in the wheel, and `memdedup run` from
the installed wheel, started outside the source tree, gets ready and stops cleanly."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consumer.kafka.localbroker import free_port
from tests.faults.harness import settings_env
from tests.integration.harness import make_settings

pytestmark = pytest.mark.integration

SOURCE_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("consumer", "schemas")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built as the Dockerfile builds it (no build isolation: the build backend
    is already installed, and the network may be closed)."""
    # From a copy of the source files only: a checkout's stale build/ and
    # *.egg-info would otherwise hand the build files its package data leaves out.
    source = tmp_path_factory.mktemp("source")
    for name in source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(SOURCE_ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            "--quiet",
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("memdedup-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into its own directory (dependencies come from the
    test environment); returns that directory."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def source_files(*paths: str) -> list[str]:
    """The checkout's files (tracked, or new and not ignored) under `paths`."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *paths],
        cwd=SOURCE_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [name for name in listed if (SOURCE_ROOT / name).is_file()]


def packaged_files() -> set[str]:
    return set(source_files(*PACKAGES))


def test_the_wheel_holds_every_file_of_the_packages(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
    missing = sorted(packaged_files() - in_wheel)
    assert not missing, f"left out of the wheel: {missing}"


def installed_env(target: Path, extra: dict[str, str]) -> dict[str, str]:
    # The installed copy first on the path: the editable checkout must not answer.
    return {**os.environ, "PYTHONPATH": str(target), "HF_HUB_OFFLINE": "1", **extra}


def test_the_installed_package_is_the_one_imported(installed: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import consumer, schemas; print(consumer.__file__)"],
        cwd=tmp_path,
        env=installed_env(installed, {}),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(result.stdout.strip()).is_relative_to(installed)


def test_the_installed_package_renders_the_html_report(installed: Path, tmp_path: Path) -> None:
    # The template is package data: read from the installed copy, not the checkout.
    script = (
        "from datetime import UTC, datetime\n"
        "from consumer.compaction import render_html\n"
        "print(render_html([], generated_at=datetime.now(UTC)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=installed_env(installed, {}),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("<!DOCTYPE html>")
    assert "No clusters: compaction would change nothing." in result.stdout


def readiness(port: int) -> tuple[int, dict[str, Any]] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")
    except OSError:
        return None


@pytest.fixture
def running_from_wheel(
    installed: Path, local_broker: Any, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path / "data")
    port = free_port()
    env = installed_env(
        installed,
        {
            **settings_env(settings),
            "MEMDEDUP_HTTP__PORT": str(port),
            "MEMDEDUP_LOG__FORMAT": "json",
            "MEMDEDUP_EMBEDDING__ONNX_CACHE_DIR": str(tmp_path / "onnx"),
        },
    )
    log_path = tmp_path / "consumer.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [str(installed / "bin" / "memdedup"), "run"],
            cwd=tmp_path,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        try:
            yield process, port
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    print(log_path.read_text(errors="replace")[-4000:])  # shown when the test fails


def test_memdedup_run_from_the_wheel_gets_ready_and_stops_on_sigterm(
    running_from_wheel: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = running_from_wheel
    deadline = time.monotonic() + 180
    ready = None
    while time.monotonic() < deadline and process.poll() is None:
        ready = readiness(port)
        if ready is not None and ready[0] == 200:
            break
        time.sleep(0.5)
    assert process.poll() is None, f"exited with {process.returncode} before getting ready"
    assert ready is not None
    assert ready[0] == 200, ready
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0


def test_the_image_installs_the_wheel_not_the_source_tree() -> None:
    dockerfile = (SOURCE_ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "pip wheel" in dockerfile
    assert "/dist/memdedup-*.whl" in dockerfile
    assert "pip install --no-cache-dir .\n" not in dockerfile
