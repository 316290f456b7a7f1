"""What one chat-completion call carries between the app and the backends."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ledger.gateway.auth import KeyInfo


@dataclass
class Call:
    key: KeyInfo
    payload: dict[str, Any]
    messages: list[dict[str, Any]]
    max_tokens: int  # per completion
    max_tokens_given: bool
    stream: bool
    include_usage: bool
    prompt_tokens: int
    timeout: float
    n: int = 1
    images: int = 0
    bearer: str = field(default="", repr=False)  # the agent's key, to mask in recordings


@dataclass
class Usage:
    """Filled in by a backend as it learns; read by the meter when the call ends."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    output_chunks: int = 0
    outcome: str = "ok"
    cursor: int | None = None
    settled: bool = False
    free: bool = False  # answered from a recording: metered at no cost
    extra: dict[str, Any] = field(default_factory=dict)

    def take(self, usage: object) -> None:
        """Take the provider's counts, when they are counts at all.

        A negative or absurd number (or a boolean) is not taken: it would bill a negative
        cost or fail the settlement's write, and the meter's own count stands in for it.
        """
        if isinstance(usage, dict):
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if _plausible(prompt):
                self.tokens_in = prompt
            if _plausible(completion):
                self.tokens_out = completion


# Spend rows keep token counts in 32-bit columns on PostgreSQL.
MAX_TOKENS_COUNTED = 2**31 - 1


def _plausible(count: object) -> TypeGuard[int]:
    return (
        isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_TOKENS_COUNTED
    )


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
