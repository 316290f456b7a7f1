"""The workspace agent: the runtime's loop, its tools and its state, put together.

It reuses the runtime as it is: :class:`AgentLoop` (limits, retries, compaction, capped
outputs), the contained file tools, :class:`McpHub` (supervised, reconnecting MCP sessions,
tools named ``server__tool``) and the redacted trace and transcript, all under
``DIR/.bearpit/``. What the terminal adds (input, Ctrl-C, y/n questions) is in
``session.py``; this class only runs turns and keeps the history valid when one is cut.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

from runtime import __version__
from runtime.birth import BirthConfig, Limits, ModelSettings
from runtime.filetools import file_tools
from runtime.hooks import Allow, Deny, Hooks, PreToolDecision
from runtime.loop import AgentLoop, TurnResult
from runtime.mcp_client import McpHub
from runtime.model import ModelClient
from runtime.resume import replay
from runtime.tools import ToolCall, ToolRegistry
from runtime.trace import Redactor, TraceWriter, TranscriptWriter
from runtime.workspace.config import StatePaths, WorkspaceSettings
from runtime.workspace.jobs import JobManager
from runtime.workspace.notebook import Notebook
from runtime.workspace.permissions import ShellPermission, Verdict
from runtime.workspace.prompt import system_prompt
from runtime.workspace.schedule import Scheduler
from runtime.workspace.shell import shell_tool
from runtime.workspace.taskboard import TaskBoard

SOURCE = "runtime:workspace"  # not a valid MCP server name, so never a server's
MCP_START_WAIT_S = 10.0
MCP_TURN_WAIT_S = 1.0
INTERRUPTED = "Interrupted by the person at the terminal before it finished; its effect is unknown."
Ask = Callable[[str], Awaitable[bool]]


class WorkspaceAgent:
    def __init__(
        self,
        root: Path,
        settings: WorkspaceSettings,
        model: ModelSettings,
        *,
        ask: Ask,
        hooks: Hooks | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.paths = StatePaths(root.resolve())
        self.paths.state.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        self.config = BirthConfig(
            run_id=f"ws-{secrets.token_hex(4)}",
            agent_id="agent",
            model=model,
            mcp_servers=settings.mcp_servers,
            limits=limits or Limits(),
            system_prompt="(rendered at start)",
            workspace=str(self.paths.root),
            state_dir=str(self.paths.state),
            trace_path=str(self.paths.trace),
            transcript_path=str(self.paths.transcript),
        )
        self.redact = Redactor(self.config.secrets())
        self.trace = TraceWriter(self.paths.trace, self.config.run_id, "agent", self.redact)
        self.transcript = TranscriptWriter(self.paths.transcript, self.redact)
        self.hooks = hooks or Hooks()
        self.hooks.pre_tool.append(self._guard_state)
        self.wakes: asyncio.Queue[str] = asyncio.Queue()
        self.on_wake: Callable[[], None] = lambda: None
        self.permission = ShellPermission(settings.shell, ask)
        self.jobs = JobManager(
            self.paths.jobs,
            self._wake,
            max_running=settings.max_jobs,
            timeout_s=settings.job_timeout_s,
        )
        self.scheduler = Scheduler(self._wake, settings.max_schedules)
        self.notebook = Notebook(self.paths.notes, settings.notes_max_chars)
        self.board = TaskBoard(self.paths, claimant=self.config.run_id)
        self.registry = ToolRegistry(None, self.config.limits.tool_timeout_s)
        tools = [
            *file_tools(self.paths.root),
            shell_tool(self.paths, settings.shell, self.permission, self.jobs, self._shell_decided),
            *self.jobs.tools(),
            *self.board.tools(),
            *self.scheduler.tools(),
            *self.notebook.tools(),
        ]
        # A dynamic source, not built-ins: with no allowlist the registry offers every
        # dynamic tool, MCP ones included.
        self.registry.replace_source(SOURCE, [dataclasses.replace(t, source=SOURCE) for t in tools])
        self.hub = McpHub(settings.mcp_servers, self.registry, self.trace, namespaced=True)
        self.model = ModelClient(self.config.model, self.config.limits, self.trace)
        self.loop: AgentLoop | None = None
        self._interrupted = False

    def _wake(self, note: str) -> None:
        self.wakes.put_nowait(note)
        self.on_wake()

    def _guard_state(self, call: ToolCall) -> PreToolDecision:
        """The file tools write no bookkeeping: the state folder (but for the task
        worktrees in it) changes only through the board, notebook and job tools."""
        raw = call.arguments.get("path")
        if call.name not in ("write_file", "edit_file") or not isinstance(raw, str):
            return Allow()
        target = (self.paths.root / Path(raw).expanduser()).resolve()
        state, worktrees = self.paths.state.resolve(), self.paths.worktrees.resolve()
        if target.is_relative_to(state) and not target.is_relative_to(worktrees):
            return Deny(
                "the state folder .bearpit/ is kept by your task, notebook and job tools; "
                "the file tools do not write there"
            )
        return Allow()

    def _shell_decided(self, command: str, verdict: Verdict) -> None:
        self.trace.emit(
            "hook_decision",
            hook="shell_permission",
            decision="allow" if verdict.allowed else "deny",
            reason=verdict.reason,
            command=command[:500],
        )

    async def start(self, *, resume: bool = False) -> list[str]:
        """Open the MCP sessions and build the loop; the names of unreachable servers."""
        unavailable = await self.hub.start(
            min([MCP_START_WAIT_S, *(s.connect_timeout_s for s in self.settings.mcp_servers)])
        )
        prompt = system_prompt(
            workspace=self.paths.root,
            shell_policy=self.permission.describe(),
            git=self.board.git,
            tool_names=self.registry.names(),
            unavailable_servers=unavailable,
            notes=self.notebook.render(),
        )
        self.loop = AgentLoop(
            self.config, self.model, self.registry, self.hooks, self.trace, self.transcript, prompt
        )
        resumed = self.loop.restore(replay(self.paths.transcript)) if resume else 0
        config_hash = hashlib.sha256(self.config.model_dump_json().encode()).hexdigest()[:16]
        self.trace.emit(
            "run_start",
            version=__version__,
            config_hash=config_hash,
            mode="workspace",
            model=self.config.model.name,
            tools=self.registry.names(),
            unavailable_servers=unavailable,
            resumed_messages=resumed,
        )
        return unavailable

    def _drain(self) -> str | None:
        notes: list[str] = []
        while not self.wakes.empty():
            notes.append(self.wakes.get_nowait())
        if not notes:
            return None
        self.trace.emit("wake", source="during_turn", notes=len(notes))
        return wake_message(notes)

    async def turn(self, text: str) -> TurnResult:
        assert self.loop is not None, "start() first"
        if self._interrupted:
            text = f"(Your previous turn was interrupted by the person.)\n\n{text}"
            self._interrupted = False
        await self.hub.ensure_up(MCP_TURN_WAIT_S)
        self.trace.emit("wake", source="terminal")
        result = await self.loop.run_turn(text, drain=self._drain)
        self.trace.emit(
            "turn_end",
            termination=result.termination.value,
            steps=result.steps,
            tool_calls=result.tool_calls,
            error=result.error,
        )
        return result

    def take_wakes(self) -> str | None:
        """The due wakes as one message for a turn of their own, or None."""
        notes: list[str] = []
        while not self.wakes.empty():
            notes.append(self.wakes.get_nowait())
        if notes:
            self.trace.emit("wake", source="schedule_or_job", notes=len(notes))
        return wake_message(notes) if notes else None

    def interrupted(self) -> None:
        """A turn was cancelled: give every tool call without a result one saying so."""
        assert self.loop is not None
        self._interrupted = True
        messages = self.loop.messages
        at = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=0)
        answered = {str(m.get("tool_call_id")) for m in messages[at:] if m.get("role") == "tool"}
        missing = [
            call.get("id")
            for call in messages[at].get("tool_calls") or []
            if str(call.get("id")) not in answered
        ]
        for call_id in missing:
            message = {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED}
            messages.append(message)
            self.transcript.message(message)
        self.trace.emit("interrupted", unanswered_calls=len(missing))

    async def close(self, reason: str) -> None:
        self.scheduler.close()
        await self.jobs.close()
        await self.hub.close()
        await self.model.close()
        self.trace.emit("run_end", reason=reason)
        self.trace.close()
        self.transcript.close()


def wake_message(notes: list[str]) -> str:
    body = "\n".join(f"- {n}" for n in notes)
    return f"<wake>\nThe runtime wakes you (not the person):\n{body}\n</wake>"
