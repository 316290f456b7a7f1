"""Background shell jobs: started by ``shell(background=true)``, watched until they end.

Each job runs ``bash -c COMMAND`` in its own process group, its output (stdout and stderr
together) going to ``.bearpit/jobs/<id>.log``. When it ends, by itself, by ``job_kill`` or at
its time limit, the agent is woken with its exit code and the tail of its output. At most
``max_running`` jobs run at once; they are killed when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.tools import ToolDefinition, ToolFailure, object_schema

TAIL_CHARS = 2000
KILL_GRACE_S = 2.0


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, then SIGKILL it if it has not ended within the grace."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)


def tail(path: Path, chars: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - chars * 4))
            text = fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    return text[-chars:]


@dataclass
class Job:
    id: str
    command: str
    log: Path
    proc: asyncio.subprocess.Process
    started: float
    status: str = "running"  # running | exited | killed | timed_out
    exit_code: int | None = None
    watcher: asyncio.Task[None] | None = None

    def line(self) -> str:
        took = round(time.monotonic() - self.started)
        code = "" if self.exit_code is None else f", exit {self.exit_code}"
        return f"{self.id} [{self.status}{code}, {took}s] {self.command[:120]}"


class JobManager:
    def __init__(
        self,
        folder: Path,
        notify: Callable[[str], None],
        *,
        max_running: int,
        timeout_s: float,
    ) -> None:
        self._folder = folder
        self._notify = notify
        self._max_running = max_running
        self._timeout_s = timeout_s
        self.jobs: dict[str, Job] = {}

    def _running(self) -> int:
        return sum(job.status == "running" for job in self.jobs.values())

    async def start(self, command: str, cwd: Path) -> Job:
        if self._running() >= self._max_running:
            raise ToolFailure(
                f"{self._max_running} jobs are running already; wait for one or kill one",
                kind="job_cap",
            )
        self._folder.mkdir(parents=True, exist_ok=True)
        job_id = f"j{len(self.jobs) + 1}"
        log = self._folder / f"{job_id}.log"
        with log.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                command,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        job = Job(job_id, command, log, proc, time.monotonic())
        job.watcher = asyncio.create_task(self._watch(job), name=f"job-{job_id}")
        self.jobs[job_id] = job
        return job

    async def _watch(self, job: Job) -> None:
        try:
            await asyncio.wait_for(job.proc.wait(), self._timeout_s)
        except TimeoutError:
            job.status = "timed_out"
            await kill_group(job.proc)
        job.exit_code = job.proc.returncode
        if job.status == "running":
            job.status = "exited"
        self._notify(
            f"background job {job.line()} ended. Output tail:\n{tail(job.log, 600) or '(none)'}"
        )

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            known = ", ".join(self.jobs) or "none"
            raise ToolFailure(f"no job {job_id!r} (jobs: {known})", kind="not_found")
        return job

    async def kill(self, job_id: str) -> Job:
        job = self.get(job_id)
        if job.status == "running":
            job.status = "killed"
            await kill_group(job.proc)
        return job

    async def close(self) -> None:
        for job in self.jobs.values():
            if job.watcher is not None:
                job.watcher.cancel()
            if job.proc.returncode is None:
                job.status = "killed"
                await kill_group(job.proc)

    def tools(self) -> list[ToolDefinition]:
        async def job_status(args: dict[str, Any]) -> str:
            if "id" in args:
                return self.get(args["id"]).line()
            return "\n".join(job.line() for job in self.jobs.values()) or "(no jobs)"

        async def job_output(args: dict[str, Any]) -> str:
            job = self.get(args["id"])
            return tail(job.log, int(args.get("tail", TAIL_CHARS))) or "(no output yet)"

        async def job_kill(args: dict[str, Any]) -> str:
            return (await self.kill(args["id"])).line()

        job_id = {"type": "string", "pattern": "^j[0-9]+$"}
        return [
            ToolDefinition(
                "job_status",
                "Status of one background job (by id) or of all of them.",
                object_schema({"id": job_id}, []),
                job_status,
            ),
            ToolDefinition(
                "job_output",
                "The last characters of a background job's output (default 2000).",
                object_schema(
                    {"id": job_id, "tail": {"type": "integer", "minimum": 1, "maximum": 20_000}},
                    ["id"],
                ),
                job_output,
            ),
            ToolDefinition(
                "job_kill",
                "Stop a background job (its whole process group).",
                object_schema({"id": job_id}, ["id"]),
                job_kill,
            ),
        ]
