"""The workspace agent's settings file and the paths of its state folder.

``DIR/.bearpit/config.json`` (or ``--config FILE``) is optional; every key has a default::

    {
      "shell": {"mode": "ask", "allow": ["git status", "git diff*", "pytest *"],
                "timeout_s": 120},
      "mcp_servers": [{"name": "docs", "url": "http://127.0.0.1:8931/mcp",
                       "bearer_token": "${DOCS_TOKEN}"}],
      "notes_max_chars": 4000
    }

``${VAR}`` in any string is read from the environment, so tokens stay out of the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runtime.birth import BirthError, McpServerSettings, _expand_env
from runtime.record import Record, RecordError, constraint
from runtime.tools import ToolFailure

STATE_DIR = ".bearpit"


class WorkspaceError(Exception):
    """The workspace or its settings file is unusable; the message says where."""


@dataclass(kw_only=True)
class ShellSettings(Record):
    # ask: prompt y/n in the terminal (allow-listed commands run without asking);
    # allow: only allow-listed commands run; deny: no command runs.
    mode: Literal["ask", "allow", "deny"] = "ask"
    allow: list[str] = field(default_factory=list)
    timeout_s: float = field(default=120.0, metadata=constraint(gt=0))
    max_output_chars: int = field(default=50_000, metadata=constraint(ge=1000))


@dataclass(kw_only=True)
class WorkspaceSettings(Record):
    shell: ShellSettings = field(default_factory=ShellSettings)
    mcp_servers: list[McpServerSettings] = field(default_factory=list)
    notes_max_chars: int = field(default=4000, metadata=constraint(ge=100, lt=100_001))
    max_schedules: int = field(default=20, metadata=constraint(ge=1))
    max_jobs: int = field(default=4, metadata=constraint(ge=1))
    job_timeout_s: float = field(default=1800.0, metadata=constraint(gt=0))


def load_settings(root: Path, path: Path | None = None) -> WorkspaceSettings:
    """The settings from ``path`` (or the state folder's config.json, if any)."""
    source = path or root / STATE_DIR / "config.json"
    if path is None and not source.exists():
        return WorkspaceSettings()
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkspaceError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkspaceError(f"{source}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise WorkspaceError(f"{source}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    try:
        return WorkspaceSettings.model_validate(_expand_env(raw))
    except BirthError as exc:
        raise WorkspaceError(f"{source}: {exc}") from None
    except RecordError as exc:
        lines = [f"{source}: {where or '(top level)'}: {what}" for where, what in exc.problems]
        raise WorkspaceError("\n".join(lines)) from None


@dataclass(frozen=True)
class StatePaths:
    """Where the agent keeps its own files, all under ``root/.bearpit``."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def tasks(self) -> Path:
        return self.state / "tasks.json"

    @property
    def notes(self) -> Path:
        return self.state / "notes.md"

    @property
    def jobs(self) -> Path:
        return self.state / "jobs"

    @property
    def worktrees(self) -> Path:
        return self.state / "worktrees"

    @property
    def trace(self) -> Path:
        return self.state / "trace.jsonl"

    @property
    def transcript(self) -> Path:
        return self.state / "transcript.jsonl"

    def inside(self, raw: str) -> Path:
        """``raw`` (relative to the workspace, or absolute) if it stays inside it."""
        path = Path(raw).expanduser()
        candidate = (path if path.is_absolute() else self.root / path).resolve()
        if not candidate.is_relative_to(self.root):
            raise ToolFailure(f"path escapes the workspace: {raw}", kind="workspace_escape")
        return candidate
