"""One OpenAI-compatible chat completion (`POST {base_url}/chat/completions`),
shared by the synthesize merger and the LLM verifier."""

from __future__ import annotations

import httpx

from consumer.errors import MemdedupError


class ChatFailed(MemdedupError):
    """No completion text: the endpoint failed, timed out or answered oddly."""


class ChatEndpoint:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout_s = timeout_s
        self._transport = transport

    async def complete(self, prompt: str) -> str:
        """The assistant's text for one user message, at temperature 0."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
        }
        try:
            # A client per call: these calls are rare next to the model call they cost.
            async with httpx.AsyncClient(
                timeout=self._timeout_s, transport=self._transport
            ) as client:
                response = await client.post(self.url, json=body, headers=self._headers)
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ChatFailed(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise ChatFailed("the completion holds no text")
        return text
