"""The model endpoint: OpenAI Chat Completions over HTTP (TCP or the gateway's Unix socket).

Failures are sorted here: retryable (429, 5xx, a gateway that says ``retryable``, a dropped
connection) are retried with exponential backoff and jitter; a budget refusal and a context
overflow are raised as their own kinds for the loop to handle; anything else is permanent.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime import http
from runtime.birth import Limits, ModelSettings
from runtime.tools import ToolCall
from runtime.trace import TraceWriter

_OVERFLOW_MARKERS = (
    "context length",
    "maximum context",
    "context_length_exceeded",
    "tokens exceeded",
    "too many tokens",
    "token limit",
    "string too long",
)


class ProviderError(Exception):
    """A model call failed; ``retryable`` says whether trying again can help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class BudgetExceeded(ProviderError):
    """The gateway refused the call because the agent's cap is spent."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message, status=status, retryable=False)


class GatewayUnreachable(ProviderError):
    """Nothing answers at the gateway's address: the platform is restarting (or gone)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class ContextOverflow(ProviderError):
    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message, status=status, retryable=False)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class ModelReply:
    content: str
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage
    latency_s: float
    raw_message: dict[str, Any] = field(default_factory=dict)


def classify(status: int, body: bytes) -> ProviderError:
    """Turn an HTTP error answer into the right ProviderError."""
    text = body.decode("utf-8", "replace")
    message, code, retryable_flag = text[:500], "", None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        err = payload["error"]
        message = str(err.get("message", message))[:500]
        code = str(err.get("code") or err.get("type") or "")
        if isinstance(err.get("retryable"), bool):
            retryable_flag = err["retryable"]
    lowered = f"{code} {message}".lower()
    if status == 402 or "budget_exceeded" in lowered:
        return BudgetExceeded(f"budget exhausted: {message}", status)
    if any(marker in lowered for marker in _OVERFLOW_MARKERS):
        return ContextOverflow(message, status)
    retryable = retryable_flag if retryable_flag is not None else (status == 429 or status >= 500)
    return ProviderError(f"HTTP {status}: {message}", status=status, retryable=retryable)


# What a tool's argument schema may keep in the reply's grammar: the structural keywords
# llama.cpp's JSON-schema grammar understands. Formats, patterns and references are left
# out; the tool checks its arguments anyway, and an unsupported keyword fails the request.
_SCHEMA_KEYS = ("type", "properties", "required", "items", "enum", "const", "anyOf", "oneOf")
# One call a reply: a small model's second call is where it starts to ramble, and the
# loop asks again after each result anyway.
_MAX_CALLS = 1


def _plain_schema(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    for key in _SCHEMA_KEYS:
        if key not in schema:
            continue
        value = schema[key]
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _plain_schema(v) for k, v in value.items()}
        elif key == "items":
            out[key] = _plain_schema(value)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_plain_schema(v) for v in value]
        else:
            out[key] = value
    return out


def json_mode_schema(tools: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    """The reply a JSON-mode model is held to: calls of the offered tools only, each with
    that tool's own arguments (so a small model cannot misspell a name), then a message.

    The calls come first and the message is bounded to about half the reply's tokens, so a
    model that rambles is cut in its message, never before its calls are written.
    """
    calls: list[dict[str, Any]] = []
    for tool in tools:
        fn = tool["function"]
        params = _plain_schema(fn.get("parameters") or {})
        params.setdefault("type", "object")
        calls.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    item: dict[str, Any] = {"anyOf": calls} if calls else {"type": "object"}
    return {
        "type": "object",
        "properties": {
            "tool_calls": {"type": "array", "items": item, "maxItems": _MAX_CALLS},
            "message": {"type": "string", "maxLength": max(40, 2 * max_tokens)},
        },
        "required": ["tool_calls", "message"],
    }


def _strip_fence(text: str) -> str:
    """A reply wrapped in a Markdown code fence, unwrapped."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        body = body[3:-3]
        first, _, rest = body.partition("\n")
        return (rest if first.strip().isalpha() or not first.strip() else body).strip()
    return body


def close_cut_json(text: str) -> str | None:
    """A JSON-mode reply cut off in its top-level object (at max_tokens), closed there.

    Only a cut after the last whole value is repaired: the open string or key is dropped or
    closed and the object closed. A cut inside the calls (an array or an argument object
    still open) is not: a half-written call must never be run. None when nothing is
    repaired.
    """
    depth, in_string, escaped, _ = _scan(text)
    if depth != 1 or not text.lstrip().startswith("{"):
        return None
    body = text[:-1] if escaped else text
    candidates = [body + ('"' if in_string else "") + "}"]
    # Or drop the unfinished member: back to the last comma outside strings.
    last_comma = _scan(body)[3]
    if last_comma is not None:
        candidates.append(body[:last_comma] + "}")
    for candidate in candidates:
        try:
            json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        return candidate
    return None


def _scan(text: str) -> tuple[int, bool, bool, int | None]:
    """Where a JSON text stands at its end: the nesting depth, whether it is inside a
    string (and just after a backslash there), and the last comma at depth 1."""
    depth = 0
    in_string = escaped = False
    last_comma: int | None = None
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 1:
            last_comma = i
    return depth, in_string, escaped, last_comma


def parse_json_reply(content: str, next_id: Callable[[], str]) -> tuple[str, list[ToolCall]] | None:
    """Tool calls written as JSON in a reply's content, or None when it holds none.

    Two shapes are read: the JSON-mode object ``{"message": str, "tool_calls": [...]}``, and
    one bare call ``{"name": str, "arguments": {...}}`` (what models without native tool
    calling tend to write). Anything else (prose, malformed JSON) is plain text: None.
    """
    try:
        data = json.loads(_strip_fence(content))
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("name"), str) and "arguments" in data and "tool_calls" not in data:
        items: list[Any] = [data]
        message = ""
    elif isinstance(data.get("tool_calls"), list) or isinstance(data.get("message"), str):
        items = data.get("tool_calls") or []
        message = str(data.get("message") or "")
    else:
        return None
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        args = item.get("arguments", {})
        calls.append(
            ToolCall(
                id=next_id(),
                name=item["name"],
                arguments_json=args if isinstance(args, str) else json.dumps(args),
            )
        )
    return message, calls


def _to_json_mode(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Rewrite a native tool-calling history for a model that only speaks JSON output."""
    lines = [
        'Answer ONLY with a JSON object {"tool_calls": [{"name", "arguments"}], "message": '
        "str}. Put tool calls in tool_calls; leave it empty to just reply with the message.",
        "Tools (name: JSON schema of arguments):",
    ]
    for tool in tools:
        fn = tool["function"]
        lines.append(f"- {fn['name']}: {fn['description']} {json.dumps(fn['parameters'])}")
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg["role"] == "assistant" and msg.get("tool_calls"):
            calls = [
                {"name": fn["name"], "arguments": _loads_or_raw(fn["arguments"])}
                for fn in (c["function"] for c in msg["tool_calls"])
            ]
            out.append(
                {
                    "role": "assistant",
                    "content": json.dumps(
                        {"tool_calls": calls, "message": msg.get("content") or ""}
                    ),
                }
            )
        elif msg["role"] == "tool":
            text = f"[result of tool call {msg['tool_call_id']}]\n{msg['content']}"
            if out and out[-1]["role"] == "user" and out[-1].get("_tool_results"):
                out[-1]["content"] += "\n\n" + text
            else:
                out.append({"role": "user", "content": text, "_tool_results": True})
        else:
            out.append(dict(msg))
    for msg in out:
        msg.pop("_tool_results", None)
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + "\n".join(lines)}
    else:
        out.insert(0, {"role": "system", "content": "\n".join(lines)})
    return out


def _loads_or_raw(raw: str) -> Any:
    try:
        return json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return raw


class ModelClient:
    """One HTTP client to the model endpoint, reused for the agent's whole life."""

    def __init__(self, settings: ModelSettings, limits: Limits, trace: TraceWriter) -> None:
        self.settings = settings
        self._limits = limits
        self._trace = trace
        self._http = http.client(
            settings.base_url.rstrip("/") + "/",
            socket_path=settings.socket_path,
            headers={"Authorization": f"Bearer {settings.api_key}"},
            timeout=http.Timeout(settings.request_timeout_s, connect=10.0),
        )
        self._json_counter = 0
        # ``auto`` starts native and turns to JSON for good once the model shows it needs it.
        self._detected: str | None = None

    async def close(self) -> None:
        await self._http.aclose()

    def build_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.settings.name,
            "max_tokens": max_tokens or self.settings.max_output_tokens,
        }
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        if self.json_tools(tools):
            body["messages"] = _to_json_mode(messages, tools)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "agent_action",
                    "schema": json_mode_schema(tools, int(body["max_tokens"])),
                },
            }
        else:
            body["messages"] = messages
            if tools:
                body["tools"] = tools
        return body

    @property
    def tool_mode(self) -> str:
        """``native`` or ``json``: the configured mode, or what ``auto`` has settled on."""
        if self.settings.tool_mode == "auto":
            return self._detected or "native"
        return self.settings.tool_mode

    def json_tools(self, tools: list[dict[str, Any]]) -> bool:
        return self.tool_mode == "json" and bool(tools)

    def _settle_on_json(self, why: str) -> None:
        self._detected = "json"
        self._trace.emit("tool_mode_detected", mode="json", why=why)

    def _auto_pending(self, body: dict[str, Any]) -> bool:
        return self.settings.tool_mode == "auto" and self._detected is None and "tools" in body

    async def complete(self, body: dict[str, Any], *, json_tools: bool) -> ModelReply:
        try:
            return await self._complete(body, json_tools=json_tools)
        except ProviderError as exc:
            # A server that refuses the tools field outright is asked again in JSON.
            if not self._refuses_tools(body, exc):
                raise
        self._settle_on_json("the server refused native tools")
        tools = body["tools"]
        retry = self.build_body(body["messages"], tools, body.get("max_tokens"))
        return await self._complete(retry, json_tools=True)

    def _refuses_tools(self, body: dict[str, Any], exc: ProviderError) -> bool:
        return (
            self._auto_pending(body)
            and exc.status in (400, 422, 500, 501)
            and "tool" in str(exc).lower()
        )

    async def _complete(self, body: dict[str, Any], *, json_tools: bool) -> ModelReply:
        """Send one request, retrying what can be retried; raise ProviderError otherwise.

        A gateway nobody answers at is the platform restarting: the turn waits for it (up to
        ``gateway_wait_s``, trying every couple of seconds) instead of spending its retries
        and giving up, so a platform restart costs an agent no turn.
        """
        attempt = 0
        unreachable_since: float | None = None
        while True:
            try:
                return await self._once(body, json_tools=json_tools)
            except GatewayUnreachable as exc:
                now = time.monotonic()
                if unreachable_since is None:
                    unreachable_since = now
                    self._trace.emit("gateway_unreachable", error=str(exc)[:300])
                if now - unreachable_since >= self._limits.gateway_wait_s:
                    self._trace.emit(
                        "provider_error",
                        status=None,
                        error=str(exc)[:300],
                        kind=type(exc).__name__,
                        retryable=False,
                        attempt=attempt,
                    )
                    raise
                await asyncio.sleep(min(2.0, max(0.05, self._limits.backoff_base_s)))
                continue
            except ProviderError as exc:
                self._trace.emit(
                    "provider_error",
                    status=exc.status,
                    error=str(exc)[:300],
                    kind=type(exc).__name__,
                    retryable=exc.retryable,
                    attempt=attempt,
                )
                if (
                    not exc.retryable
                    or attempt >= self._limits.provider_retries
                    or self._refuses_tools(body, exc)
                ):
                    raise
                # 2 s, 8 s, 32 s ... with ±25 % jitter so a herd of agents spreads out.
                delay = self._limits.backoff_base_s * (4**attempt)
                await asyncio.sleep(delay * random.uniform(0.75, 1.25))  # noqa: S311
                attempt += 1

    async def _once(self, body: dict[str, Any], *, json_tools: bool) -> ModelReply:
        started = time.monotonic()
        try:
            response = await self._http.request("POST", "chat/completions", json=body)
        except http.HttpTimeout as exc:
            # Say which limit ran out.
            connecting = isinstance(exc, http.ConnectTimeout)
            waited = 10.0 if connecting else self.settings.request_timeout_s
            what = "connecting" if connecting else "waiting for the answer"
            raise ProviderError(
                f"model request timed out {what} ({waited:g} s)", retryable=True
            ) from None
        except http.ConnectError as exc:
            raise GatewayUnreachable(f"cannot reach the model endpoint: {exc}") from None
        except http.HttpError as exc:
            raise ProviderError(
                f"the model endpoint dropped the call: {exc}", retryable=True
            ) from None
        latency = time.monotonic() - started
        if response.status_code >= 400:
            raise classify(response.status_code, response.content)
        try:
            payload = response.json()
            choice = payload["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ProviderError(
                f"malformed completion: {response.text[:200]}",
                status=response.status_code,
                retryable=True,
            ) from None
        usage_raw = payload.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(usage_raw.get("prompt_tokens") or 0),
            completion_tokens=int(usage_raw.get("completion_tokens") or 0),
        )
        content = message.get("content") or ""
        if json_tools:
            content, calls = self._parse_json_mode(
                content, cut=choice.get("finish_reason") == "length"
            )
        elif self._auto_pending(body) and not message.get("tool_calls"):
            parsed = parse_json_reply(content, self._next_json_id)
            calls = []
            if parsed is not None:
                self._settle_on_json("the model answered tools in JSON")
                content, calls = parsed
        else:
            calls = [
                ToolCall(
                    id=str(c.get("id") or f"call_{i}"),
                    name=str(c.get("function", {}).get("name", "")),
                    arguments_json=str(c.get("function", {}).get("arguments") or ""),
                )
                for i, c in enumerate(message.get("tool_calls") or [])
            ]
        return ModelReply(
            content=content,
            tool_calls=calls,
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            latency_s=latency,
            raw_message=message,
        )

    def _next_json_id(self) -> str:
        self._json_counter += 1
        return f"json_{self._json_counter}"

    def _parse_json_mode(self, content: str, *, cut: bool) -> tuple[str, list[ToolCall]]:
        parsed = parse_json_reply(content, self._next_json_id)
        if parsed is None and cut:
            # Stopped at max_tokens: the calls usually came first and are whole.
            closed = close_cut_json(content)
            parsed = None if closed is None else parse_json_reply(closed, self._next_json_id)
        return (content, []) if parsed is None else parsed
