"""What a chat-completion request may carry, and how much of it a reservation must cover.

The gateway forwards a field only if it knows what the field can cost. Fields that multiply
the cost are bounded and reserved for: ``n`` completions of up to the output bound each,
and every image at a generous bound of prompt tokens. Fields whose cost no reservation can
bound are refused with a 400 that names them: audio in or out, predicted outputs, files,
built-in search or code tools, priority service tiers, and any provider-specific extra
(fallback model lists, best-of or beam sampling, plugins). Anything the gateway does not
know is refused the same way, so a new provider feature is never forwarded unreserved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ledger.gateway.errors import GatewayError, bad_request

MAX_N = 128  # OpenAI's own limit on completions per call
MAX_IMAGES = 500  # OpenAI's own limit on images per call
# Prompt tokens reserved per image. Providers scale an image to a bounded size, but some
# count it at a multiple (about 48k tokens for a large image on a "mini" model).
IMAGE_TOKENS = 50_000
# The output bound when a key does not know its model's context length.
UNKNOWN_CONTEXT_TOKENS = 1_000_000
MAX_TOP_LOGPROBS = 20

_CONTENT_PARTS = frozenset({"text", "image_url", "refusal"})
_TOOL_TYPES = frozenset({"function", "custom"})
_RESPONSE_FORMATS = frozenset({"text", "json_object", "json_schema"})
_SERVICE_TIERS = frozenset({"auto", "default", "flex"})  # not "priority": it costs more
_STREAM_OPTIONS = frozenset({"include_usage", "include_obfuscation"})
_MESSAGE_REFUSED = {"audio": "a reference to earlier audio is billed at audio prices"}


@dataclass(frozen=True)
class Shape:
    """The cost-relevant shape of a checked request."""

    max_tokens: int  # per completion
    max_tokens_given: bool
    n: int
    images: int
    stream: bool
    include_usage: bool


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fail(name: str, what: str) -> GatewayError:
    return bad_request(f"{name}: {what}", code="invalid_parameter")


def _check_number(name: str, value: object) -> None:
    if not _is_number(value):
        raise _fail(name, "must be a number")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise _fail(name, "must be true or false")


def _check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise _fail(name, "must be a string")


def _check_int(name: str, value: object) -> None:
    if not _is_int(value):
        raise _fail(name, "must be a whole number")


def _check_object(name: str, value: object) -> None:
    if not isinstance(value, dict):
        raise _fail(name, "must be an object")


def _check_choice(name: str, value: object) -> None:
    if not isinstance(value, str | dict):
        raise _fail(name, "must be a string or an object")


def _check_stop(name: str, value: object) -> None:
    if not isinstance(value, str) and not (
        isinstance(value, list) and all(isinstance(s, str) for s in value)
    ):
        raise _fail(name, "must be a string or a list of strings")


def _check_top_logprobs(name: str, value: object) -> None:
    if not _is_int(value) or not 0 <= value <= MAX_TOP_LOGPROBS:  # type: ignore[operator]
        raise _fail(name, f"must be a whole number from 0 to {MAX_TOP_LOGPROBS}")


def _check_n(name: str, value: object) -> None:
    if not _is_int(value) or not 1 <= value <= MAX_N:  # type: ignore[operator]
        raise _fail(name, f"must be a whole number from 1 to {MAX_N}")


def _check_tools(name: str, value: object) -> None:
    if not isinstance(value, list):
        raise _fail(name, "must be a list")
    for i, tool in enumerate(value):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind not in _TOOL_TYPES:
            raise _fail(
                f"{name}[{i}].type",
                f"{kind!r} is not accepted: only function and custom tools, because "
                "built-in tools (search, code, files) are billed per use",
            )


def _check_functions(name: str, value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(f, dict) for f in value):
        raise _fail(name, "must be a list of objects")


def _check_response_format(name: str, value: object) -> None:
    if not isinstance(value, dict) or value.get("type") not in _RESPONSE_FORMATS:
        raise _fail(name, "must be an object whose type is text, json_object or json_schema")


def _check_service_tier(name: str, value: object) -> None:
    if value not in _SERVICE_TIERS:
        raise _fail(name, f"must be one of {', '.join(sorted(_SERVICE_TIERS))}")


def _check_modalities(name: str, value: object) -> None:
    if value != ["text"]:
        raise _fail(name, 'only ["text"] is accepted: audio output is billed at audio prices')


def _check_stream_options(name: str, value: object) -> None:
    if not isinstance(value, dict):
        raise _fail(name, "must be an object")
    for option, flag in value.items():
        if option not in _STREAM_OPTIONS:
            raise _fail(f"{name}.{option}", "is not accepted")
        if not isinstance(flag, bool):
            raise _fail(f"{name}.{option}", "must be true or false")


def _ignored(name: str, value: object) -> None:
    """``model``: the key decides the model; whatever the client names is replaced."""


# Every field the gateway forwards, with its check. ``messages`` and the output bounds are
# checked by ``check`` itself, since the reservation depends on them.
_FIELDS: Mapping[str, Callable[[str, object], None]] = {
    "model": _ignored,
    "n": _check_n,
    "stream": _check_bool,
    "stream_options": _check_stream_options,
    "temperature": _check_number,
    "top_p": _check_number,
    "presence_penalty": _check_number,
    "frequency_penalty": _check_number,
    "stop": _check_stop,
    "seed": _check_int,
    "logprobs": _check_bool,
    "top_logprobs": _check_top_logprobs,
    "logit_bias": _check_object,
    "user": _check_str,
    "safety_identifier": _check_str,
    "prompt_cache_key": _check_str,
    "tools": _check_tools,
    "tool_choice": _check_choice,
    "functions": _check_functions,
    "function_call": _check_choice,
    "parallel_tool_calls": _check_bool,
    "response_format": _check_response_format,
    "reasoning_effort": _check_str,
    "verbosity": _check_str,
    "service_tier": _check_service_tier,
    "modalities": _check_modalities,
}
_BOUNDS = ("max_completion_tokens", "max_tokens")


def _images(messages: list[Any]) -> int:
    """Check the messages; return how many images they carry."""
    if not messages:
        raise bad_request("messages: must be a non-empty list", code="invalid_messages")
    images = 0
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            raise bad_request("messages: every message needs a role", code="invalid_messages")
        for field, why in _MESSAGE_REFUSED.items():
            if field in msg:
                raise bad_request(f"messages[{i}].{field}: not accepted: {why}", "invalid_messages")
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in _CONTENT_PARTS:
                raise bad_request(
                    f"messages[{i}].content[{j}].type: {kind!r} is not accepted (text and "
                    "image_url only: audio and files cost more than their size shows)",
                    code="invalid_messages",
                )
            if kind == "image_url":
                images += 1
    if images > MAX_IMAGES:
        raise bad_request(f"messages: at most {MAX_IMAGES} images", code="invalid_messages")
    return images


def _output_bound(payload: dict[str, Any], bound: int, default: int) -> tuple[int, bool]:
    given = [(name, payload[name]) for name in _BOUNDS if payload.get(name) is not None]
    for name, value in given:
        if not _is_int(value) or value < 1:
            raise _fail(name, "must be a positive whole number")
        if value > bound:
            raise _fail(name, f"must be at most {bound}, the model's context length")
    if len(given) == 2:
        if given[0][1] != given[1][1]:
            raise _fail(
                "max_tokens",
                "give max_tokens or max_completion_tokens, not two different bounds",
            )
        del payload["max_tokens"]  # one bound goes upstream, the one reserved for
    if given:
        return given[0][1], True
    return min(default, bound), False


def check(payload: object, *, context_length: int | None, default_max_tokens: int) -> Shape:
    """Check a parsed request body in place; raise a 400 GatewayError naming the field."""
    if not isinstance(payload, dict):
        raise bad_request("request body must be a JSON object")
    messages = payload.get("messages")
    if not isinstance(messages, list):
        raise bad_request("messages: must be a non-empty list", code="invalid_messages")
    images = _images(messages)
    for name, value in payload.items():
        if name == "messages" or name in _BOUNDS:
            continue
        checker = _FIELDS.get(name)
        if checker is None:
            raise _fail(
                name,
                "not accepted by the gateway: it forwards only fields whose cost a "
                "reservation can bound",
            )
        if value is not None:
            checker(name, value)
    max_tokens, given = _output_bound(
        payload, context_length or UNKNOWN_CONTEXT_TOKENS, default_max_tokens
    )
    options = payload.get("stream_options") or {}
    return Shape(
        max_tokens=max_tokens,
        max_tokens_given=given,
        n=payload.get("n") or 1,
        images=images,
        stream=bool(payload.get("stream")),
        include_usage=bool(options.get("include_usage")),
    )
