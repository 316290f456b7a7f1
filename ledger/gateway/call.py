"""What one chat-completion call carries between the app and the backends."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ledger.gateway.auth import KeyInfo


@dataclass
class Call:
    key: KeyInfo
    payload: dict[str, Any]
    messages: list[dict[str, Any]]
    max_tokens: int
    max_tokens_given: bool
    stream: bool
    include_usage: bool
    prompt_tokens: int
    timeout: float


@dataclass
class Usage:
    """Filled in by a backend as it learns; read by the meter when the call ends."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    output_chunks: int = 0
    outcome: str = "ok"
    cursor: int | None = None
    settled: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def take(self, usage: object) -> None:
        if isinstance(usage, dict):
            if isinstance(usage.get("prompt_tokens"), int):
                self.tokens_in = usage["prompt_tokens"]
            if isinstance(usage.get("completion_tokens"), int):
                self.tokens_out = usage["completion_tokens"]


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
