"""The terminal session of the workspace agent: prompt, turns, Ctrl-C, slash commands.

* A line typed at the prompt (or a multi-line input, see ``console.py``) starts a turn.
* A schedule or a background job falling due wakes the agent: at once when it waits at the
  prompt, at the next round boundary when it is mid-turn.
* Ctrl-C during a turn cancels it (the model call or the tool in flight; a shell command's
  process group is killed) and the session goes on at the prompt. At the prompt, Ctrl-C
  clears a half-typed input; with none, a second Ctrl-C in a row ends the session, as do
  ``/quit`` and the end of input.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import TextIO

from runtime.birth import Limits, ModelSettings
from runtime.hooks import Hooks
from runtime.loop import Termination, TurnResult
from runtime.terminal_bus import Writer
from runtime.tools import ToolCall, ToolResult
from runtime.workspace.agent import WorkspaceAgent
from runtime.workspace.config import WorkspaceSettings
from runtime.workspace.console import Console

HELP = """\
Type a request and press Enter. End a line with \\ to go on on the next line, or paste
between two lines of \"\"\" . Ctrl-C stops the current turn; twice at the prompt, /quit or
the end of input leaves.
  /tasks      the task board          /notes      the notebook
  /jobs       background jobs         /schedules  pending schedules
  /help       this text               /quit       leave
"""


class Session:
    def __init__(self, agent: WorkspaceAgent, console: Console) -> None:
        self.agent = agent
        self.console = console
        self.turn: asyncio.Task[TurnResult] | None = None
        self.quit = False
        self.armed = False  # one Ctrl-C at an empty prompt; a second one leaves
        self._ready = asyncio.Event()

    # -- signals and sources -------------------------------------------------------------

    def on_interrupt(self) -> None:
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
            return
        if self.console.clear_partial():
            self.console.say("\n(input cleared)")
        elif self.armed:
            self.quit = True
            self._ready.set()
            return
        else:
            self.armed = True
            self.console.say("\n(Ctrl-C again or /quit to leave)")
        self.console.prompt()

    async def _next(self) -> tuple[str, str] | None:
        while True:
            if self.quit:
                return None
            if not self.console.inputs.empty():
                return "input", self.console.inputs.get_nowait()
            wake = self.agent.take_wakes()
            if wake is not None:
                return "wake", wake
            if self.console.eof:
                return None
            self._ready.clear()
            await self._ready.wait()

    # -- the session ---------------------------------------------------------------------

    async def run(self, *, resume: bool = False) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.on_interrupt)
        self.agent.on_wake = self._ready.set
        reason = "quit"
        try:
            unavailable = await self.agent.start(resume=resume)
            self._banner(unavailable)
            self.console.start(self._ready.set)
            while True:
                self.console.prompt()
                item = await self._next()
                if item is None:
                    break
                kind, text = item
                self.armed = False
                if kind == "input" and text.startswith("/"):
                    if not self._command(text):
                        break
                    continue
                if kind == "wake":
                    self.console.say(f"\n{text}")
                await self._turn(text)
        except Exception as exc:
            reason = f"error: {type(exc).__name__}: {exc}"
            raise
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await self.agent.close(reason)
            self.console.say("\nbye")

    def _banner(self, unavailable: list[str]) -> None:
        agent = self.agent
        lines = [
            f"workspace {agent.paths.root} · model {agent.config.model.name}",
            f"shell: {agent.permission.describe()}",
            f"state and trace in {agent.paths.state}"
            + (" · git worktrees on" if agent.board.git else ""),
        ]
        if unavailable:
            lines.append(f"unreachable tool servers: {', '.join(unavailable)}")
        lines.append("/help for help")
        self.console.say("\n".join(lines))

    async def _turn(self, text: str) -> None:
        self.turn = asyncio.create_task(self.agent.turn(text), name="workspace-turn")
        try:
            await asyncio.wait({self.turn})
        finally:
            turn, self.turn = self.turn, None
        if turn.cancelled():
            self.agent.interrupted()
            self.console.say("\n(interrupted)")
            return
        error = turn.exception()
        if error is not None:
            raise error
        result = turn.result()
        if result.final_text:
            self.console.say(result.final_text)
        elif result.termination is Termination.COMPLETED:
            # A silent turn still ends visibly, so nobody waits for an answer that is not coming.
            self.console.say("(the model answered with no text)")
        if result.termination is not Termination.COMPLETED:
            detail = f": {result.error}" if result.error else ""
            self.console.say(f"(turn ended: {result.termination.value}{detail})")

    def _command(self, text: str) -> bool:
        """Run a slash command; False when it ends the session."""
        word = text.split()[0].lower()
        if word in ("/quit", "/exit"):
            return False
        agent = self.agent
        if word == "/help":
            self.console.write(HELP)
        elif word == "/tasks":
            tasks = agent.board.tasks()
            self.console.say(
                "\n".join(
                    f"{t['id']} [{t['status']}] {t['title']}"
                    + (f" (after {', '.join(t['depends_on'])})" if t["depends_on"] else "")
                    for t in tasks
                )
                or "(no tasks)"
            )
        elif word == "/notes":
            self.console.say(agent.notebook.render() or "(no notes)")
        elif word == "/jobs":
            self.console.say("\n".join(j.line() for j in agent.jobs.jobs.values()) or "(no jobs)")
        elif word == "/schedules":
            self.console.say(
                "\n".join(s.line() for s in agent.scheduler.pending.values()) or "(no schedules)"
            )
        else:
            self.console.say(f"unknown command {word}; /help lists them")
        return True


def activity_hook(console: Console) -> Hooks:
    """Show each tool call as it ends: its name, its arguments (cut) and how it went."""

    def shown(call: ToolCall, result: ToolResult) -> None:
        args = json.dumps(call.arguments, ensure_ascii=False)
        args = args if len(args) <= 120 else args[:117] + "..."
        kind = f" ({result.error_kind})" if result.error_kind else ""
        console.say(f"  · {call.name} {args} → {result.outcome.value}{kind}")

    return Hooks(post_tool=[lambda call, result: shown(call, result)])


async def run_workspace(
    root: Path,
    settings: WorkspaceSettings,
    model: ModelSettings,
    stdin: TextIO,
    stdout: Writer,
    *,
    resume: bool = False,
    limits: Limits | None = None,
) -> None:
    """Run the workspace agent at this terminal until the person leaves."""
    console = Console(stdin, stdout)

    async def ask(command: str) -> bool:
        return await console.ask(f"\nshell wants to run: {command}\nallow?")

    agent = WorkspaceAgent(
        root, settings, model, ask=ask, hooks=activity_hook(console), limits=limits
    )
    console.redact = agent.redact
    await Session(agent, console).run(resume=resume)
