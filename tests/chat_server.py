"""An OpenAI-compatible chat completions server on loopback, for the merger and the
LLM verifier: answers what the test sets, records what it was asked."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Completions:
    """What the server answers, and what it was asked: (path, headers, body)."""

    status: int = 200
    text: str | None = None
    delay_s: float = 0.0
    # Sent as the whole response body instead of a completion carrying `text`.
    raw: bytes | None = None
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)


@contextlib.contextmanager
def chat_completions_server(text: str | None) -> Iterator[tuple[Completions, str]]:
    """Yields the server's state (answering `text` until changed) and its base URL."""
    state = Completions(text=text)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((self.path, dict(self.headers), body))
            time.sleep(state.delay_s)
            answer = {"choices": [{"message": {"role": "assistant", "content": state.text}}]}
            raw = state.raw if state.raw is not None else json.dumps(answer).encode()
            # After a client timeout the connection is gone: nothing to answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(state.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
