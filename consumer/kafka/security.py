"""Kafka connection security (SecuritySettings) as client arguments.

- `faststream_security(s)`: for `KafkaBroker(..., security=...)`;
- `aiokafka_kwargs(s)`: for the plain aiokafka clients (AIOKafkaConsumer,
  AIOKafkaProducer, AIOKafkaAdminClient): `security_protocol`, `ssl_context`,
  `sasl_mechanism`, `sasl_plain_username`, `sasl_plain_password`;
- `describe(s)`: what may be logged (never a secret).

TLS contexts come from aiokafka.helpers.create_ssl_context: the CA file (the
system's CAs when none is set), an optional client certificate and key.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiokafka.helpers import create_ssl_context
from faststream.security import (
    BaseSecurity,
    SASLPlaintext,
    SASLScram256,
    SASLScram512,
)

from consumer.settings import ConfigError, SecuritySettings

__all__ = ["aiokafka_kwargs", "describe", "faststream_security", "sasl_password", "ssl_context"]


def uses_tls(security: SecuritySettings) -> bool:
    return security.security_protocol in ("SSL", "SASL_SSL")


def uses_sasl(security: SecuritySettings) -> bool:
    return security.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def ssl_context(security: SecuritySettings) -> ssl.SSLContext | None:
    """The TLS context, or None when the protocol does not use TLS."""
    if not uses_tls(security):
        return None
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path: Path | None = getattr(security, name)
        if path is not None and not path.is_file():
            raise ConfigError(
                f"security.{name}: {path} is not a readable file "
                f"(set MEMDEDUP_SECURITY__{name.upper()})"
            )
    secret = security.ssl_key_password
    # A callable, never None: OpenSSL would otherwise prompt on a terminal for the
    # password of an encrypted key instead of failing.
    password: str | Callable[[], str] = (
        secret.get_secret_value() if secret is not None else _no_password
    )
    try:
        context: ssl.SSLContext = create_ssl_context(
            cafile=security.ssl_cafile,
            certfile=security.ssl_certfile,
            keyfile=security.ssl_keyfile,
            password=password,
        )
    except (ssl.SSLError, OSError) as exc:
        # The message names files and the OpenSSL reason, never the key password.
        raise ConfigError(f"security: cannot load the TLS files: {exc}") from exc
    context.check_hostname = security.ssl_check_hostname
    return context


def _no_password() -> str:
    return ""


def sasl_password(security: SecuritySettings) -> str | None:
    """The SASL password, from the setting or the file (trailing newline dropped)."""
    if security.sasl_password is not None:
        return security.sasl_password.get_secret_value()
    if security.sasl_password_file is not None:
        try:
            text = security.sasl_password_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"security.sasl_password_file: cannot read {security.sasl_password_file}: "
                f"{exc.strerror} (set MEMDEDUP_SECURITY__SASL_PASSWORD_FILE)"
            ) from exc
        return text.rstrip("\r\n")
    return None


def aiokafka_kwargs(security: SecuritySettings) -> dict[str, Any]:
    """Keyword arguments for aiokafka clients; `{"security_protocol": "PLAINTEXT"}`
    when nothing is configured."""
    kwargs: dict[str, Any] = {"security_protocol": security.security_protocol}
    context = ssl_context(security)
    if context is not None:
        kwargs["ssl_context"] = context
    if uses_sasl(security):
        kwargs["sasl_mechanism"] = security.sasl_mechanism
        kwargs["sasl_plain_username"] = security.sasl_username
        kwargs["sasl_plain_password"] = sasl_password(security)
    return kwargs


def faststream_security(security: SecuritySettings) -> BaseSecurity | None:
    """The `security=` argument of FastStream's KafkaBroker (None: plaintext)."""
    context = ssl_context(security)
    tls = uses_tls(security)
    if not uses_sasl(security):
        return BaseSecurity(ssl_context=context, use_ssl=True) if tls else None
    username = security.sasl_username or ""
    password = sasl_password(security) or ""
    classes: dict[str, type[SASLPlaintext | SASLScram256 | SASLScram512]] = {
        "PLAIN": SASLPlaintext,
        "SCRAM-SHA-256": SASLScram256,
        "SCRAM-SHA-512": SASLScram512,
    }
    mechanism = security.sasl_mechanism or "PLAIN"
    return classes[mechanism](username, password, ssl_context=context, use_ssl=tls)


def describe(security: SecuritySettings) -> dict[str, str | None]:
    """Loggable facts about the connection security: no password, no key."""
    return {
        "security_protocol": security.security_protocol,
        "sasl_mechanism": security.sasl_mechanism if uses_sasl(security) else None,
        "sasl_username": security.sasl_username if uses_sasl(security) else None,
        "ssl_cafile": str(security.ssl_cafile) if security.ssl_cafile else None,
        "ssl_certfile": str(security.ssl_certfile) if security.ssl_certfile else None,
    }
