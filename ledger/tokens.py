"""Token counting and the reservation's prompt estimate.

Counting uses tiktoken's ``cl100k_base`` from the copy LiteLLM bundles, so it works with
no network and without importing LiteLLM itself.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tiktoken

# OpenAI's accounting for chat messages: a few tokens of framing per message and for the
# reply's priming.
_PER_MESSAGE = 3
_PER_REPLY = 3


@functools.cache
def _encoding() -> tiktoken.Encoding:
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        bundled = (
            Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils/tokenizers"
        )
        if bundled.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    return tiktoken.get_encoding("cl100k_base")


def count_text(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


def truncate_text(text: str, max_tokens: int) -> str:
    enc = _encoding()
    return enc.decode(enc.encode(text, disallowed_special=())[:max_tokens])


def content_text(content: object) -> str:
    """The text of a message's ``content`` (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return json.dumps(content)


def count_messages(messages: Iterable[Mapping[str, Any]], tools: object = None) -> int:
    total = _PER_REPLY
    for msg in messages:
        total += _PER_MESSAGE
        total += count_text(str(msg.get("role", "")))
        total += count_text(content_text(msg.get("content")))
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") or {}
            total += count_text(str(fn.get("name", ""))) + count_text(str(fn.get("arguments", "")))
        if msg.get("name"):
            total += count_text(str(msg["name"]))
    if tools:
        total += count_text(json.dumps(tools, separators=(",", ":")))
    return total


BYTES_PER_TOKEN = 3


def estimate_prompt_tokens(body_bytes: int) -> int:
    """The prompt tokens a reservation assumes: the request body's size at 3 bytes a token.

    Tokenizers average about 4 bytes a token on English and somewhat fewer on code and
    JSON, so this errs high for most prompts without tokenizing on the hot path (the
    tokenizer alone would add ~40 MB to the gateway and milliseconds per large prompt).
    The unused part of ``max_tokens`` in the reservation covers prompts denser than that.
    """
    return body_bytes // BYTES_PER_TOKEN + 1
