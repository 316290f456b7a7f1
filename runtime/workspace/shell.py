"""The ``shell`` tool: ``bash -c COMMAND`` in the workspace, after the permission hook.

A command runs only when :class:`ShellPermission` allows it; a refusal comes back as a
``blocked`` result and nothing is started. It runs in its own process group with stdin
closed, its working folder inside the workspace (``cwd``), stdout and stderr merged, the
output capped (head and tail kept) and the exit code reported. At its timeout, or when the
turn is interrupted (Ctrl-C), the whole process group is killed. ``background=true`` hands it
to the job manager instead and returns the job id at once.

The shell is not a sandbox: a command can reach anything the user can. The permission hook
is what stands between the model and the machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.tools import ToolDefinition, ToolFailure, object_schema
from runtime.workspace.config import ShellSettings, StatePaths
from runtime.workspace.jobs import JobManager, kill_group
from runtime.workspace.permissions import ShellPermission, Verdict

# How long the person at the terminal may take to answer, on top of the command's timeout.
ASK_GRACE_S = 600.0

Record = Callable[[str, Verdict], None]


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


async def run_command(command: str, cwd: Path, timeout_s: float, limit: int) -> str:
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        await kill_group(proc)
        raise ToolFailure(
            f"the command did not finish within {timeout_s:g}s and was killed"
        ) from None
    finally:
        # Interrupted (Ctrl-C cancels the turn): nothing it started may live on.
        await asyncio.shield(kill_group(proc))
    text = cap(out.decode("utf-8", "replace"), limit)
    return f"exit code {proc.returncode}\n{text}".rstrip()


def shell_tool(
    paths: StatePaths,
    settings: ShellSettings,
    permission: ShellPermission,
    jobs: JobManager,
    record: Record,
) -> ToolDefinition:
    async def shell(args: dict[str, Any]) -> str:
        command = str(args["command"])
        cwd = paths.inside(args.get("cwd", "."))
        if not cwd.is_dir():
            raise ToolFailure(f"no such folder: {args.get('cwd')}", kind="not_found")
        verdict = await permission.decide(command)
        record(command, verdict)
        if not verdict.allowed:
            raise ToolFailure(
                f"the permission hook refused this command ({verdict.reason})", kind="denied"
            )
        if args.get("background"):
            job = await jobs.start(command, cwd)
            return f"started background job {job.id}; you are woken when it ends"
        timeout = min(float(args.get("timeout_s", settings.timeout_s)), settings.timeout_s)
        return await run_command(command, cwd, timeout, settings.max_output_chars)

    return ToolDefinition(
        "shell",
        "Run a bash command in the workspace (or in cwd, a folder inside it). "
        f"{permission.describe().capitalize()}. background=true starts a job and returns its id.",
        object_schema(
            {
                "command": {"type": "string", "minLength": 1},
                "cwd": {"type": "string", "description": "folder inside the workspace"},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0},
                "background": {"type": "boolean"},
            },
            ["command"],
        ),
        shell,
        timeout_s=settings.timeout_s + ASK_GRACE_S,
    )
