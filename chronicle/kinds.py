"""The Chronicle's event kinds and lifecycle values (string values are the format)."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    LIFECYCLE = "lifecycle"
    SPEND = "spend"
    SCORE = "score"
    FILE = "file"
    VIOLATION = "violation"
    VERDICT = "verdict"
    TALLY = "tally"
    SYSTEM = "system"
    TURN = "turn"
    PRIVATE = "private"
    NOTE = "note"
    EXEC = "exec"
    EXEC_RESULT = "exec_result"
    OUTPUT = "output"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TOOL_MANIFEST = "tool_manifest"
    ELIMINATION = "elimination"
    SEALED_SUBMIT = "sealed_submit"
    REVEAL = "reveal"
    MACHINE = "machine"
    GAME = "game"
    TRACE = "trace"
    KEY = "key"
    """A virtual key was minted: its agent, provider, model, transport and prices."""
    REPLAY = "replay"
    """A replaying realm left its recording: ``event`` diverged, exhausted or live, with
    the agent, the call number and (diverged) where the request differed."""
    TASK = "task"
    """A change on the task board: ``op`` add, assign, claim, release, complete, block or
    expire, the task's ``task`` number and who did it. With worktrees, also the git steps:
    ``worktree`` (created), ``commit``, ``merge``, ``conflict``, ``cleanup`` and
    ``git_error``."""
    SCHEDULE = "schedule"
    """A schedule was set or cancelled: ``op`` add or cancel, its ``schedule`` number and
    ``agent``."""
    JOB = "job"
    """A background job: ``op`` start, kill or end, its ``job`` number and ``agent``."""
    WAKE = "wake"
    """A wake for one agent: ``op`` due, deliver, ack or give_up; ``source`` schedule or
    job and its number as ``ref``."""


class Lifecycle(StrEnum):
    PROVISIONING = "provisioning"
    RUNNING = "running"
    CONCLUDING = "concluding"
    ARCHIVED = "archived"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    TEARDOWN_ERROR = "teardown_error"
    BUDGET_EXHAUSTED = "budget_exhausted"
    AGENT_KILLED = "agent_killed"


TERMINAL_LIFECYCLE = frozenset({Lifecycle.ARCHIVED, Lifecycle.FAILED, Lifecycle.INTERRUPTED})
