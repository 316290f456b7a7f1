"""Scribe's model calls: OpenAI-compatible chat completions, through the gateway or direct.

Through the gateway the endpoint holds the session's own virtual key; direct (``pit
assist --api-base``) it holds what the operator typed, which is never stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings

MAX_TOKENS = 4096
TIMEOUT_S = 600.0


class ModelError(Exception):
    """The model call failed; the message says why, without any secret."""


class BudgetExhausted(ModelError):
    """The gateway refused the call: Scribe's key has spent its cap."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str
    model: str
    uds: str | None = None

    def __repr__(self) -> str:  # never the key
        return f"Endpoint({self.base_url!r}, model={self.model!r})"


def gateway_endpoint(secret: str, model: str) -> Endpoint:
    """The gateway, as ``BEARPIT_SCRIBE_GATEWAY`` names it (a URL or a socket path)."""
    where = settings.BEARPIT_SCRIBE_GATEWAY or str(
        Path(settings.BEARPIT_HOME) / "run" / "gateway.sock"
    )
    if where.startswith(("http://", "https://")):
        return Endpoint(base_url=where.rstrip("/"), api_key=secret, model=model)
    return Endpoint(base_url="http://gateway/v1", api_key=secret, model=model, uds=where)


def _detail(response: httpx.Response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        return "", response.text[:300]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or ""), str(error.get("message") or "")[:500]
    return "", str(error or body)[:300]


def complete(
    endpoint: Endpoint, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """One chat completion; the first choice's message."""
    transport = httpx.HTTPTransport(uds=endpoint.uds) if endpoint.uds else None
    payload = {
        "model": endpoint.model,
        "messages": messages,
        "tools": tools,
        "tool_choice": "auto",
        "max_tokens": MAX_TOKENS,
    }
    try:
        with httpx.Client(transport=transport, timeout=TIMEOUT_S) as client:
            response = client.post(
                f"{endpoint.base_url}/chat/completions",
                json=payload,
                headers={"Authorization": f"Bearer {endpoint.api_key}"},
            )
    except httpx.HTTPError as exc:
        raise ModelError(f"the model endpoint {endpoint.base_url} did not answer: {exc}") from exc
    if response.status_code != 200:
        code, message = _detail(response)
        if response.status_code == 402 or code == "budget_exceeded":
            raise BudgetExhausted(message or "Scribe's budget cap is spent")
        raise ModelError(f"the model endpoint refused the call ({response.status_code}): {message}")
    try:
        body = response.json()
        message_out = body["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelError("the model's reply is not an OpenAI chat completion") from exc
    if not isinstance(message_out, dict):
        raise ModelError("the model's reply has no message")
    return message_out
