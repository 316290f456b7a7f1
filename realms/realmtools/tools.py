"""The realmtools verbs as MCP tools: typed signatures the schema is built from.

Each tool parses nothing itself: it hands its arguments to :func:`dispatch`,
which finds the caller, checks the catalogue, runs the mechanic in a worker
thread (the ORM is synchronous) and audits the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio
from django.db import close_old_connections
from mcp.server.fastmcp import Context, FastMCP

from chronicle.values import BadValue, check_value
from realms.realmtools import (
    audit,
    catalogue,
    jobs,
    schedules,
    taskboard,
    taskboard_leases,
    worktrees_merge,
)
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal
from realms.realmtools.facts import load_facts
from realms.realmtools.identity import Identity
from realms.realmtools.machine import service as machine
from realms.realmtools.mechanics import (
    budget,
    escrow,
    notes,
    private,
    scores,
    table,
    turns,
)
from realms.realmtools.mechanics import code as sandbox_code

IDENTITY_KEY = "bearpit.identity"
TOKEN_KEY = "bearpit.token"  # noqa: S105 - a scope key, not a secret

# What is wrong with the arguments of the call being served, if anything. The server
# checks every call's arguments once, before the SDK hands them to a tool, and each
# tool's body refuses here, after the catalogue check, so the refusal has the tool's
# own shape and is audited like any other.
ARGUMENT_PROBLEM: ContextVar[str | None] = ContextVar("realmtools_argument_problem", default=None)


def argument_problem(arguments: Any) -> str | None:
    """Why the Chronicle could not keep these arguments (see chronicle.values), or None."""
    try:
        check_value(arguments, "arguments")
    except BadValue as exc:
        return str(exc)
    return None


def identity_of(ctx: Context[Any, Any, Any]) -> tuple[Identity, str]:
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    identity = scope.get(IDENTITY_KEY)
    if not isinstance(identity, Identity):
        raise RuntimeError("a realmtools call arrived without a verified identity")
    return identity, str(scope.get(TOKEN_KEY, ""))


def run_for(identity: Identity, name: str, fn: Callable[[Caller], Any]) -> Any:
    """Check and run one call for ``identity``: the body of every tool, off the loop."""
    started = time.monotonic()
    close_old_connections()
    try:
        caller = Caller(identity, load_facts(identity.realm_id))
        rule = catalogue.check(name, caller)
        _renew_leases(caller)
        problem = ARGUMENT_PROBLEM.get()
        if problem is not None:
            raise Refusal(problem)
        result = fn(caller)
    except Refusal as refusal:
        text = catalogue.RULES.get(name)
        result = f"error: {refusal.message}" if text and text.text else refusal.as_result()
    except Exception as exc:
        audit.failed(identity.realm_id, identity.agent_id, name, exc)
        raise
    else:
        if rule.text and isinstance(result, dict) and "error" in result:
            result = f"error: {result['error']}"
    finally:
        close_old_connections()
    audit.record(
        identity.realm_id,
        identity.agent_id,
        identity.role,
        name,
        result,
        (time.monotonic() - started) * 1000,
    )
    return result


def _renew_leases(caller: Caller) -> None:
    """Any call by a claimant is work on its tasks: it renews their leases."""
    board = caller.facts.plan.task_board
    if board is not None and caller.facts.live:
        taskboard_leases.renew(caller.realm_id, caller.agent_id, board)


async def dispatch(ctx: Context[Any, Any, Any], name: str, fn: Callable[[Caller], Any]) -> Any:
    identity, _ = identity_of(ctx)
    return await anyio.to_thread.run_sync(run_for, identity, name, fn)


Ctx = Context[Any, Any, Any]


def register(mcp: FastMCP[Any]) -> None:
    """Add every built-in verb to ``mcp``."""

    @mcp.tool()
    async def submit_sealed(round: str, payload: str, ctx: Ctx) -> str:
        """Seal your move or bid for a round (exact label, e.g. 'R1'). Final once sent;
        hidden from everyone until the referee reveals the round."""
        return str(
            await dispatch(ctx, "submit_sealed", lambda c: escrow.submit_sealed(c, round, payload))
        )

    @mcp.tool()
    async def reveal_status(round: str, ctx: Ctx) -> dict[str, Any]:
        """Who has sealed for a round and who is still pending (never the contents)."""
        return dict(await dispatch(ctx, "reveal_status", lambda c: escrow.reveal_status(c, round)))

    @mcp.tool()
    async def reveal(round: str, ctx: Ctx) -> dict[str, Any]:
        """Referee: open a round's sealed submissions and close it. One-way; check
        reveal_status first."""
        return dict(await dispatch(ctx, "reveal", lambda c: escrow.reveal(c, round)))

    @mcp.tool()
    async def tally(
        round: str, ruleset: str, ctx: Ctx, config: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Referee: reveal if needed and compute a round with a ruleset (dominance,
        high-bid, low-bid, plurality, majority, unanimous, custom:<name>)."""
        return dict(await dispatch(ctx, "tally", lambda c: escrow.tally(c, round, ruleset, config)))

    @mcp.tool()
    async def turn_status(ctx: Ctx) -> dict[str, Any]:
        """The floor: the open round, the last completed round, whose turn it is."""
        return dict(await dispatch(ctx, "turn_status", turns.turn_status))

    @mcp.tool()
    async def send_private(to: str, message: str, ctx: Ctx) -> str:
        """Send a private message to another agent (delivered in your shared DM room)."""
        return str(
            await dispatch(ctx, "send_private", lambda c: private.send_private(c, to, message))
        )

    @mcp.tool()
    async def run_code(code: str, ctx: Ctx, background: bool = False) -> dict[str, Any]:
        """Run Python in your own sandbox (home folder and the shared folder if any);
        returns the exit code and what it printed. background=true (where the realm runs
        background jobs): returns a job id at once and wakes you when the job ends."""
        _, token = identity_of(ctx)

        def run(c: Caller) -> dict[str, Any]:
            if background:
                return jobs.start_job(c, code, bearer=token)
            return sandbox_code.run_code(c, code, bearer=token)

        return dict(await dispatch(ctx, "run_code", run))

    @mcp.tool()
    async def remember(note: str, ctx: Ctx) -> str:
        """Keep a private note; every turn starts from nothing, so write down what matters."""
        return str(await dispatch(ctx, "remember", lambda c: notes.remember(c, note)))

    @mcp.tool()
    async def recall(ctx: Ctx) -> dict[str, Any]:
        """Your notes, oldest first."""
        return dict(await dispatch(ctx, "recall", notes.recall))

    @mcp.tool()
    async def score(agent: str, delta: float, reason: str, ctx: Ctx) -> dict[str, Any]:
        """Referee: add delta (may be negative) to an agent's score."""
        return dict(await dispatch(ctx, "score", lambda c: scores.score(c, agent, delta, reason)))

    @mcp.tool()
    async def penalize(agent: str, amount: float, reason: str, ctx: Ctx) -> dict[str, Any]:
        """Referee: record a violation and take |amount| off the agent's score."""
        return dict(
            await dispatch(ctx, "penalize", lambda c: scores.penalize(c, agent, amount, reason))
        )

    @mcp.tool()
    async def flag(agent: str, reason: str, ctx: Ctx) -> dict[str, Any]:
        """Referee: record a violation without changing the score."""
        return dict(await dispatch(ctx, "flag", lambda c: scores.flag(c, agent, reason)))

    @mcp.tool()
    async def scoreboard(ctx: Ctx) -> dict[str, Any]:
        """Everyone's score: the sum of all recorded score changes."""
        return dict(await dispatch(ctx, "scoreboard", scores.scoreboard))

    @mcp.tool()
    async def eliminate(agent: str, reason: str, ctx: Ctx) -> dict[str, Any]:
        """Referee: remove a participant for good (its sandbox is stopped). 'none' closes
        the round without removing anyone."""
        return dict(await dispatch(ctx, "eliminate", lambda c: scores.eliminate(c, agent, reason)))

    @mcp.tool()
    async def rule(outcome: str, reasons: str | list[str], ctx: Ctx) -> dict[str, Any]:
        """Referee: give the final verdict. Only one ever stands."""
        return dict(await dispatch(ctx, "rule", lambda c: scores.rule(c, outcome, reasons)))

    @mcp.tool()
    async def game_state(
        ctx: Ctx, since: int | None = None, log_limit: int = 100
    ) -> dict[str, Any]:
        """The machine: state, whose action it is, the data you may see, and the log
        (pass next_since back as since to read only what is new)."""
        return dict(
            await dispatch(ctx, "game_state", lambda c: machine.game_state(c, since, log_limit))
        )

    @mcp.tool()
    async def game_act(
        transition: str, ctx: Ctx, args: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Take a declared transition; the machine checks state, role and guards."""
        return dict(
            await dispatch(ctx, "game_act", lambda c: machine.game_act(c, transition, args))
        )

    @mcp.tool()
    async def game_set(key: str, value: Any, ctx: Ctx, owner: str | None = None) -> dict[str, Any]:
        """Referee: write a machine data key (owner keys need the owner's id)."""
        return dict(
            await dispatch(ctx, "game_set", lambda c: machine.game_set(c, key, value, owner))
        )

    @mcp.tool()
    async def game_declaration(ctx: Ctx) -> dict[str, Any]:
        """The machine's declaration: roles, states, data keys, transitions, wakes."""
        return dict(await dispatch(ctx, "game_declaration", machine.game_declaration))

    @mcp.tool()
    async def table_talk(ctx: Ctx, since: int | None = None, limit: int = 50) -> dict[str, Any]:
        """Referee: read the Commons, whose posts do not wake you (pass the returned
        cursor back as since for only what is new)."""
        return dict(await dispatch(ctx, "table_talk", lambda c: table.table_talk(c, since, limit)))

    @mcp.tool()
    async def budget_status(ctx: Ctx) -> dict[str, Any]:
        """Your model spend so far, your cap and what is left."""
        return dict(await dispatch(ctx, "budget_status", budget.budget_status))

    register_task_board(mcp)
    register_worktrees(mcp)
    register_schedules_and_jobs(mcp)


def register_task_board(mcp: FastMCP[Any]) -> None:
    """The task board's verbs (shown only in realms whose spec enables the board)."""

    @mcp.tool()
    async def task_add(
        title: str,
        ctx: Ctx,
        detail: str | None = None,
        depends_on: list[int | str] | None = None,
        assignee: str | None = None,
    ) -> dict[str, Any]:
        """Add a task to the board. depends_on: numbers of tasks that must be done before
        this one can be claimed. assignee (referee or lead only): who alone may claim it."""
        return dict(
            await dispatch(
                ctx,
                "task_add",
                lambda c: taskboard.task_add(c, title, detail, depends_on, assignee),
            )
        )

    @mcp.tool()
    async def task_list(ctx: Ctx, filter: str = "all") -> dict[str, Any]:
        """The board. filter: all, open (claimable now), mine, claimed, blocked, done, or
        waiting (dependencies not done yet)."""
        return dict(await dispatch(ctx, "task_list", lambda c: taskboard.task_list(c, filter)))

    @mcp.tool()
    async def task_claim(id: int | str, ctx: Ctx) -> dict[str, Any]:
        """Claim a task to work on it; exactly one claimant wins. Refused while its
        dependencies are not done. Your tool calls and messages keep the claim alive."""
        return dict(await dispatch(ctx, "task_claim", lambda c: taskboard.task_claim(c, id)))

    @mcp.tool()
    async def task_release(id: int | str, ctx: Ctx) -> dict[str, Any]:
        """Give a task you hold back to the pool (a lead or the referee may release any)."""
        return dict(await dispatch(ctx, "task_release", lambda c: taskboard.task_release(c, id)))

    @mcp.tool()
    async def task_complete(id: int | str, summary: str, ctx: Ctx) -> dict[str, Any]:
        """Mark a task you hold done, with a short summary of what you delivered."""
        return dict(
            await dispatch(ctx, "task_complete", lambda c: taskboard.task_complete(c, id, summary))
        )

    @mcp.tool()
    async def task_block(id: int | str, reason: str, ctx: Ctx) -> dict[str, Any]:
        """Mark a task blocked, with the reason; it leaves your hands and can be claimed
        again once the reason is dealt with."""
        return dict(
            await dispatch(ctx, "task_block", lambda c: taskboard.task_block(c, id, reason))
        )

    @mcp.tool()
    async def task_assign(id: int | str, agent: str, ctx: Ctx) -> dict[str, Any]:
        """Referee or lead: reserve a task for one participant ('none' lifts it)."""
        return dict(
            await dispatch(ctx, "task_assign", lambda c: taskboard.task_assign(c, id, agent))
        )


def register_worktrees(mcp: FastMCP[Any]) -> None:
    """Task worktrees' verbs (shown only when the task board declares worktrees)."""

    @mcp.tool()
    async def task_merge(id: int | str, ctx: Ctx) -> dict[str, Any]:
        """Referee or lead: merge a done task's branch (task/<id>) into the shared folder's
        checkout. A conflict is reported with its files; the merge is then aborted and the
        checkout left as it was."""
        return dict(await dispatch(ctx, "task_merge", lambda c: worktrees_merge.task_merge(c, id)))


def register_schedules_and_jobs(mcp: FastMCP[Any]) -> None:
    """Schedules and background jobs (shown only in realms whose spec enables them)."""

    @mcp.tool()
    async def schedule(
        note: str,
        ctx: Ctx,
        after: str | float | None = None,
        every: str | float | None = None,
        cron: str | None = None,
    ) -> dict[str, Any]:
        """Ask to be woken with your note: once after a delay (after="10m"), repeatedly
        (every="1h"), or on a five-field UTC cron (cron="0 9 * * 1-5"). Give exactly one."""
        return dict(
            await dispatch(
                ctx, "schedule", lambda c: schedules.schedule(c, note, after, every, cron)
            )
        )

    @mcp.tool()
    async def schedule_cancel(id: int | str, ctx: Ctx) -> dict[str, Any]:
        """Cancel one of your schedules."""
        return dict(
            await dispatch(ctx, "schedule_cancel", lambda c: schedules.schedule_cancel(c, id))
        )

    @mcp.tool()
    async def schedule_list(ctx: Ctx) -> dict[str, Any]:
        """Your schedules: active ones with when they are next due, and recently ended ones."""
        return dict(await dispatch(ctx, "schedule_list", schedules.schedule_list))

    @mcp.tool()
    async def job_status(ctx: Ctx, id: int | str | None = None) -> dict[str, Any]:
        """One of your background jobs (or, without id, your recent ones): running, done,
        timed_out, killed or lost, with the exit code once it ended."""
        return dict(await dispatch(ctx, "job_status", lambda c: jobs.job_status(c, id)))

    @mcp.tool()
    async def job_output(id: int | str, ctx: Ctx, tail: int | None = None) -> dict[str, Any]:
        """What a background job of yours printed (tail: only its last lines)."""
        return dict(await dispatch(ctx, "job_output", lambda c: jobs.job_output(c, id, tail)))

    @mcp.tool()
    async def job_kill(id: int | str, ctx: Ctx) -> dict[str, Any]:
        """Kill a background job of yours that is still running."""
        return dict(await dispatch(ctx, "job_kill", lambda c: jobs.job_kill(c, id)))
