"""SecuritySettings mapped to aiokafka and FastStream connection arguments."""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from faststream.kafka.security import parse_security
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512

from consumer.kafka.security import (
    aiokafka_kwargs,
    describe,
    faststream_security,
    sasl_password,
    ssl_context,
)
from consumer.settings import ConfigError, SecuritySettings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("MEMDEDUP_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A self-signed certificate for localhost/127.0.0.1, its key in clear and
    encrypted with the password `k3y-pass`."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available to make a test certificate")
    root = tmp_path_factory.mktemp("tls")
    cert, key = root / "cert.pem", root / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    encrypted = root / "key-encrypted.pem"
    subprocess.run(
        [
            "openssl", "pkey", "-in", str(key), "-out", str(encrypted),
            "-aes256", "-passout", "pass:k3y-pass",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return {"cert": cert, "key": key, "encrypted_key": encrypted}


def test_default_is_plaintext() -> None:
    security = SecuritySettings()
    assert security.security_protocol == "PLAINTEXT"
    assert aiokafka_kwargs(security) == {"security_protocol": "PLAINTEXT"}
    assert faststream_security(security) is None
    assert ssl_context(security) is None


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_without_tls(mechanism: str) -> None:
    security = SecuritySettings.model_validate(
        {"sasl_mechanism": mechanism, "sasl_username": "svc", "sasl_password": "s3cret"}
    )
    assert security.security_protocol == "SASL_PLAINTEXT"
    assert aiokafka_kwargs(security) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cret",
    }
    fs = faststream_security(security)
    expected_class = {
        "PLAIN": SASLPlaintext,
        "SCRAM-SHA-256": SASLScram256,
        "SCRAM-SHA-512": SASLScram512,
    }[mechanism]
    assert type(fs) is expected_class
    # FastStream turns it into the same client arguments.
    assert fs is not None
    assert parse_security(fs) == {**aiokafka_kwargs(security), "ssl_context": None}


def test_sasl_over_tls_with_system_cas() -> None:
    security = SecuritySettings.model_validate(
        {
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "svc",
            "sasl_password": "s3cret",
            "tls": True,
        }
    )
    kwargs = aiokafka_kwargs(security)
    assert kwargs["security_protocol"] == "SASL_SSL"
    context = kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    fs = faststream_security(security)
    assert isinstance(fs, SASLScram512)
    assert fs.use_ssl
    assert parse_security(fs)["security_protocol"] == "SASL_SSL"


def test_tls_files_select_ssl(certs: dict[str, Path]) -> None:
    security = SecuritySettings(
        ssl_cafile=certs["cert"], ssl_certfile=certs["cert"], ssl_keyfile=certs["key"]
    )
    assert security.security_protocol == "SSL"
    kwargs = aiokafka_kwargs(security)
    assert set(kwargs) == {"security_protocol", "ssl_context"}
    assert kwargs["security_protocol"] == "SSL"
    fs = faststream_security(security)
    assert type(fs) is BaseSecurity
    assert fs.use_ssl
    assert parse_security(fs)["security_protocol"] == "SSL"


def test_encrypted_key_needs_its_password(certs: dict[str, Path]) -> None:
    files = {
        "ssl_cafile": certs["cert"],
        "ssl_certfile": certs["cert"],
        "ssl_keyfile": certs["encrypted_key"],
    }
    good = SecuritySettings.model_validate({**files, "ssl_key_password": "k3y-pass"})
    assert ssl_context(good) is not None
    missing = SecuritySettings.model_validate(files)
    wrong = SecuritySettings.model_validate({**files, "ssl_key_password": "nope"})
    for settings in (missing, wrong):
        with pytest.raises(ConfigError) as info:
            ssl_context(settings)
        assert "k3y-pass" not in str(info.value)


def test_missing_tls_file_names_the_variable(tmp_path: Path) -> None:
    security = SecuritySettings(ssl_cafile=tmp_path / "absent.pem")
    with pytest.raises(ConfigError, match="MEMDEDUP_SECURITY__SSL_CAFILE"):
        aiokafka_kwargs(security)


async def test_context_verifies_the_broker_certificate(certs: dict[str, Path]) -> None:
    """A real TLS handshake: the CA file is trusted, the host name is checked."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(certs["cert"], certs["key"])

    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    try:
        trusting = ssl_context(SecuritySettings(ssl_cafile=certs["cert"]))
        assert trusting is not None
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=trusting, server_hostname="localhost"
        )
        assert await reader.read() == b"hello"
        writer.close()

        # System CAs only: the self-signed broker certificate is refused.
        untrusting = ssl_context(SecuritySettings(tls=True))
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection(
                "127.0.0.1", port, ssl=untrusting, server_hostname="localhost"
            )
        # Trusted CA, wrong host name: refused unless host name checks are off.
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection(
                "127.0.0.1", port, ssl=trusting, server_hostname="kafka.example"
            )
        lenient = ssl_context(SecuritySettings(ssl_cafile=certs["cert"], ssl_check_hostname=False))
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=lenient, server_hostname="kafka.example"
        )
        assert await reader.read() == b"hello"
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_password_file(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-a-file\n", encoding="utf-8")
    security = SecuritySettings(
        sasl_mechanism="PLAIN", sasl_username="svc", sasl_password_file=secret
    )
    assert sasl_password(security) == "from-a-file"
    assert aiokafka_kwargs(security)["sasl_plain_password"] == "from-a-file"
    missing = security.model_copy(update={"sasl_password_file": tmp_path / "absent"})
    with pytest.raises(ConfigError, match="MEMDEDUP_SECURITY__SASL_PASSWORD_FILE"):
        sasl_password(missing)


async def test_kwargs_are_accepted_by_aiokafka() -> None:
    security = SecuritySettings.model_validate(
        {
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_username": "svc",
            "sasl_password": "s3cret",
            "tls": True,
        }
    )
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **aiokafka_kwargs(security))
    assert consumer._client._security_protocol == "SASL_SSL"
    assert consumer._client._sasl_mechanism == "SCRAM-SHA-256"


def test_from_environment_and_never_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_SECURITY__SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("MEMDEDUP_SECURITY__SASL_USERNAME", "svc")
    monkeypatch.setenv("MEMDEDUP_SECURITY__SASL_PASSWORD", "top-s3cret")
    monkeypatch.setenv("MEMDEDUP_SECURITY__TLS", "true")
    settings = load_settings()
    assert settings.security.security_protocol == "SASL_SSL"
    assert "top-s3cret" not in repr(settings)
    assert "top-s3cret" not in str(settings.model_dump())
    assert "top-s3cret" not in str(describe(settings.security))
    assert describe(settings.security)["sasl_username"] == "svc"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sasl_mechanism": "PLAIN", "sasl_password": "x"}, "needs sasl_username"),
        ({"sasl_mechanism": "PLAIN", "sasl_username": "u"}, "needs sasl_password"),
        ({"protocol": "SASL_SSL"}, "needs sasl_mechanism"),
        (
            {"protocol": "SSL", "sasl_mechanism": "PLAIN", "sasl_username": "u", "sasl_password": "p"},
            "does not use sasl_mechanism",
        ),
        (
            {"sasl_mechanism": "PLAIN", "sasl_username": "u", "sasl_password": "p", "sasl_password_file": "/x"},
            "not both",
        ),
        ({"ssl_keyfile": "/k.pem"}, "needs ssl_certfile"),
        ({"protocol": "PLAINTEXT", "ssl_cafile": "/ca.pem"}, "does not use the ssl_"),
        ({"sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
    ],
)  # fmt: skip
def test_inconsistent_settings_are_refused(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_settings(security=values)
    assert "MEMDEDUP_SECURITY" in str(info.value)


def test_explicit_protocol_wins(certs: dict[str, Path]) -> None:
    security = SecuritySettings(protocol="SSL")
    assert security.security_protocol == "SSL"
    assert isinstance(aiokafka_kwargs(security)["ssl_context"], ssl.SSLContext)
