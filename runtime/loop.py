"""One turn of the agent: model → tools → results, until it stops or a limit is hit.

Limits are checked before every model call. Every tool call id gets exactly one result, even
when the call is refused or its arguments are garbage, so the history always stays valid.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from runtime.birth import BirthConfig
from runtime.context import Compactor, cap_output, estimate_tokens
from runtime.hooks import Allow, Deny, Hooks, Modify
from runtime.model import (
    BudgetExceeded,
    ContextOverflow,
    ModelClient,
    ModelReply,
    ProviderError,
)
from runtime.request_record import RequestRecorder, reply_record
from runtime.resume import repair
from runtime.tools import Outcome, ToolCall, ToolRegistry, ToolResult, parse_arguments
from runtime.trace import TraceWriter, TranscriptWriter

Message = dict[str, Any]


def cut_note(max_tokens: int) -> str:
    """What the model is told after a reply the provider stopped at ``max_tokens``."""
    return (
        f"Runtime note: your previous reply was cut off at the output limit ({max_tokens} "
        "tokens). Its text was truncated and any tool calls in it were dropped, not run. "
        "Retry with a shorter reply: fewer words, smaller tool arguments, or the work split "
        "over several calls."
    )


class Termination(StrEnum):
    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    WALL_TIME = "wall_time"
    CONSECUTIVE_ERRORS = "consecutive_errors"
    BUDGET_EXHAUSTED = "budget_exhausted"
    PROVIDER_ERROR = "provider_error"
    CONTEXT_OVERFLOW = "context_overflow"


@dataclass
class TurnResult:
    termination: Termination
    final_text: str
    steps: int
    tool_calls: int
    error: str | None = None


Drain = Callable[[], str | None]


class AgentLoop:
    """The conversation of one agent and the loop that advances it a turn at a time."""

    def __init__(
        self,
        config: BirthConfig,
        model: ModelClient,
        registry: ToolRegistry,
        hooks: Hooks,
        trace: TraceWriter,
        transcript: TranscriptWriter,
        system_prompt: str,
    ) -> None:
        self.config = config
        self.limits = config.limits
        self.model = model
        self.registry = registry
        self.hooks = hooks
        self.trace = trace
        self.transcript = transcript
        self.spill_dir = Path(config.state_dir) / "tool-results"
        self.compactor = Compactor(self.limits, config.model.context_length, self._summarise)
        self.messages: list[Message] = []
        self._last_prompt_tokens = 0
        self._counted_upto = 0
        # Set by a reply cut at max_tokens; said once, on the next model call, whether
        # that is later in the same turn or on the next wake.
        self._pending_note: str | None = None
        self._requests = RequestRecorder()
        self._append({"role": "system", "content": system_prompt})

    # -- history -------------------------------------------------------------------------

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        self.transcript.message(message)

    def estimated_tokens(self) -> int:
        return self._last_prompt_tokens + estimate_tokens(self.messages[self._counted_upto :])

    def restore(self, previous: list[Message]) -> int:
        """Continue a conversation recorded before a restart, under today's system prompt."""
        body = repair([m for m in previous if m.get("role") != "system"])
        if not body:
            return 0
        self.messages = [self.messages[0], *body]
        self._last_prompt_tokens, self._counted_upto = 0, 0
        self.transcript.note("resume", history=self.messages)
        return len(body)

    async def _summarise(self, prompt: str) -> str:
        body = self.model.build_body(
            [
                {"role": "system", "content": "You write faithful, compact summaries."},
                {"role": "user", "content": prompt},
            ],
            [],
            max_tokens=self.limits.summary_max_tokens,
        )
        reply = await self.model.complete(body, json_tools=False)
        return reply.content

    async def compact(self, reason: str) -> bool:
        before_count = len(self.messages)
        result = await self.compactor.compact(self.messages)
        if result is None:
            self.trace.emit("compaction", reason=reason, skipped="nothing to summarise")
            return False
        self.messages = result.messages
        self._last_prompt_tokens, self._counted_upto = 0, 0
        self.transcript.note("compaction", reason=reason, history=result.messages)
        self.trace.emit(
            "compaction",
            reason=reason,
            before_tokens=result.before_tokens,
            after_tokens=result.after_tokens,
            summarised_messages=result.summarised,
            messages_before=before_count,
            messages_after=len(self.messages),
            summary="ok" if result.summary_ok else "fallback",
        )
        return True

    # -- the turn ------------------------------------------------------------------------

    async def run_turn(self, opening: str, drain: Drain | None = None) -> TurnResult:
        self.trace.turn += 1
        self.trace.step = 0
        self._append({"role": "user", "content": opening})
        started = time.monotonic()
        steps = calls = consecutive_errors = 0
        overflow_retried = False
        while True:
            pending = drain() if drain else None
            if pending:
                self._append({"role": "user", "content": pending})
            hit = self._limit_hit(steps, started, consecutive_errors)
            if hit is not None:
                self.trace.emit("limit_hit", limit=hit.value, steps=steps)
                return TurnResult(hit, "", steps, calls)
            if self.compactor.due(self.estimated_tokens()):
                await self.compact("threshold")
            if self._pending_note:  # after compaction, so no summary swallows it
                self._append({"role": "system", "content": self._pending_note})
                self._pending_note = None
            tools = self.registry.schemas()
            body = self.model.build_body(self.messages, tools)
            for pre_model in self.hooks.pre_model:
                body = pre_model(body) or body
            self.trace.emit(
                "model_request",
                messages=len(self.messages),
                tools=len(tools),
                estimated_tokens=self.estimated_tokens(),
                request=self._requests.record(body, tools),
            )
            try:
                reply = await self.model.complete(body, json_tools=self.model.json_tools(tools))
            except ContextOverflow as exc:
                if overflow_retried or not await self.compact("overflow"):
                    return TurnResult(Termination.CONTEXT_OVERFLOW, "", steps, calls, str(exc))
                overflow_retried = True
                continue
            except BudgetExceeded as exc:
                return TurnResult(Termination.BUDGET_EXHAUSTED, "", steps, calls, str(exc))
            except ProviderError as exc:
                return TurnResult(Termination.PROVIDER_ERROR, "", steps, calls, str(exc))
            steps += 1
            self.trace.step = steps
            self.trace.emit(
                "model_response",
                finish_reason=reply.finish_reason,
                usage={
                    "prompt_tokens": reply.usage.prompt_tokens,
                    "completion_tokens": reply.usage.completion_tokens,
                },
                latency_ms=round(reply.latency_s * 1000),
                tool_calls=[{"id": c.id, "name": c.name} for c in reply.tool_calls],
                reply=reply_record(reply.content, reply.tool_calls),
            )
            if reply.finish_reason == "length":
                self._note_cut(reply, int(body.get("max_tokens") or 0))
            assistant: Message = {"role": "assistant", "content": reply.content}
            if reply.tool_calls:
                assistant["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments_json},
                    }
                    for c in reply.tool_calls
                ]
            self._append(assistant)
            if reply.usage.prompt_tokens:
                self._last_prompt_tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens
                self._counted_upto = len(self.messages)
            if not reply.tool_calls:
                nudge = self._on_stop(reply.content)
                if nudge:
                    self._append({"role": "user", "content": nudge})
                    continue
                return TurnResult(Termination.COMPLETED, reply.content.strip(), steps, calls)
            used = 0
            failures = 0
            for call in reply.tool_calls:
                calls += 1
                cap = min(
                    self.limits.max_tool_output_chars,
                    max(self.limits.max_round_output_chars - used, self.limits.tool_preview_chars),
                )
                result = await self._run_tool(call, cap)
                used += len(result.output)
                failures += result.outcome != Outcome.SUCCESS
            consecutive_errors = consecutive_errors + 1 if failures == len(reply.tool_calls) else 0

    def _note_cut(self, reply: ModelReply, max_tokens: int) -> None:
        """A reply stopped at ``max_tokens`` looks like a finished one (often empty, its
        tool calls dropped by the provider): trace it and tell the model next time."""
        self.trace.emit(
            "reply_truncated",
            max_tokens=max_tokens,
            completion_tokens=reply.usage.completion_tokens,
            text_chars=len(reply.content),
            tool_calls=len(reply.tool_calls),
        )
        self._pending_note = cut_note(max_tokens)

    def _limit_hit(self, steps: int, started: float, errors: int) -> Termination | None:
        if steps >= self.limits.max_steps_per_turn:
            return Termination.MAX_STEPS
        if time.monotonic() - started >= self.limits.max_wall_seconds_per_turn:
            return Termination.WALL_TIME
        if errors >= self.limits.max_consecutive_errors:
            return Termination.CONSECUTIVE_ERRORS
        return None

    def _on_stop(self, final_text: str) -> str | None:
        for hook in self.hooks.on_stop:
            nudge = hook(final_text)
            if nudge:
                self.trace.emit("hook_decision", hook="on_stop", decision="continue")
                return nudge
        return None

    async def _run_tool(self, call: ToolCall, cap: int) -> ToolResult:
        started = time.monotonic()
        self.trace.emit(
            "tool_call", id=call.id, name=call.name, arguments=call.arguments_json[:500]
        )
        result = await self._decide_and_dispatch(call)
        for post_tool in self.hooks.post_tool:
            replaced = post_tool(call, result)
            if replaced is not None:
                self.trace.emit("hook_decision", hook="post_tool", id=call.id, decision="modify")
                result = replaced
        text, spill = cap_output(
            result.output, call.id, cap, self.limits.tool_preview_chars, self.spill_dir
        )
        self._append({"role": "tool", "tool_call_id": call.id, "content": text})
        self.trace.emit(
            "tool_result",
            id=call.id,
            name=call.name,
            outcome=result.outcome.value,
            error_kind=result.error_kind,
            size=len(result.output),
            duration_ms=round((time.monotonic() - started) * 1000),
            spill_path=str(spill) if spill else None,
        )
        return result

    async def _decide_and_dispatch(self, call: ToolCall) -> ToolResult:
        arguments, problem = parse_arguments(call.arguments_json)
        if arguments is None:
            return ToolResult.error(
                "invalid_json", f"{problem}. Call {call.name} again with a JSON object."
            )
        call.arguments = arguments
        for pre_tool in self.hooks.pre_tool:
            try:
                decision = pre_tool(call)
            except Exception as exc:  # a broken policy hook must block, never allow
                self.trace.emit(
                    "hook_decision", hook="pre_tool", id=call.id, decision="error", error=repr(exc)
                )
                return ToolResult.blocked("hook_error", "the call was blocked by a policy check")
            if isinstance(decision, Deny):
                self.trace.emit(
                    "hook_decision",
                    hook="pre_tool",
                    id=call.id,
                    decision="deny",
                    reason=decision.reason,
                )
                return ToolResult.blocked("denied", decision.reason)
            if isinstance(decision, Modify):
                self.trace.emit("hook_decision", hook="pre_tool", id=call.id, decision="modify")
                call.arguments = decision.arguments
                call.arguments_json = json.dumps(decision.arguments)
            elif not isinstance(decision, Allow):
                raise TypeError(f"pre_tool hook returned {decision!r}")
        return await self.registry.dispatch(call)
