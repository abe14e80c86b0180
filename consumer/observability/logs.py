"""structlog set-up: JSON when not on a terminal (or when asked), console otherwise.

Records carry tenant, namespace, event_id and content hash; never memory text.
Client libraries (aiokafka, httpx, ...) log through the standard library: their
records are rendered by the same renderer, so with JSON every line on stderr is
one JSON object (with `logger`, the library's logger name).
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

# Marks the root handler installed here, so that a second call replaces it.
_HANDLER_NAME = "memdedup-structlog"


def configure_logging(
    *, level: str = "INFO", fmt: Literal["auto", "json", "console"] = "auto"
) -> None:
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if use_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    # Client libraries log through the standard library; keep them to warnings
    # (or the configured level, when higher), rendered as the service's own lines.
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.stdlib.add_logger_name,
            structlog.stdlib.ExtraAdder(),
            *shared,
        ],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
