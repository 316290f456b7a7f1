from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from realms.forge import layout
from realms.forge.command import runtime_argv
from realms.forge.models import Sandbox
from realms.forge.services import (
    AgentSandboxRequest,
    release_realm,
    start_agent_sandboxes,
    stop_realm_sandboxes,
)
from realms.forge.spec import MIB, Limits
from realms.models import Realm
from tests.fixtures.realms import build_realm
from tests.fixtures.worker import worker_index


def _uid_base() -> int:
    """A block of 1000 uids of its own per test session, so sessions sharing the host
    rarely collide, and the xdist workers of one session never do: worker N of W takes
    a block whose number is N modulo W."""
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    block = secrets.randbelow(500 // workers) * workers + worker_index() % workers
    return 400000 + block * 1000


UID_BASE = _uid_base()

SMALL = Limits(
    memory_bytes=192 * MIB,
    cpus=1.0,
    max_processes=48,
    disk_bytes=16 * MIB,
    shared_disk_bytes=16 * MIB,
)

VIRTUAL_KEY = "sk-virtual-0123456789abcdef"
BUS_TOKEN = "syt_bus_token_abcdefghijkl"


def birth_config(agent_id: str) -> str:
    return json.dumps(
        {
            "agent": agent_id,
            "model": {"base_url": "http://gateway/v1", "api_key": f"{VIRTUAL_KEY}-{agent_id}"},
            "bus": {"access_token": f"{BUS_TOKEN}-{agent_id}"},
            "mcp_servers": {"realm": {"headers": {"Authorization": "Bearer mcp-token-xyz987"}}},
        }
    )


@pytest.fixture(autouse=True)
def forge_settings(settings: Any) -> Any:
    settings.BEARPIT_SANDBOX = "bwrap"
    settings.BEARPIT_SANDBOX_UID_BASE = UID_BASE
    settings.BEARPIT_SANDBOX_UID_COUNT = 500
    layout.sockets_dir().mkdir(parents=True, exist_ok=True)
    layout.sockets_dir().chmod(0o755)
    return settings


@pytest.fixture
def make_realm(tmp_path: Path) -> Iterator[Callable[..., Realm]]:
    """A launched realm of two agents (the sandboxes the tests start are named freely)."""
    made: list[str] = []

    def make(state: str = Realm.State.RUNNING) -> Realm:
        realm_id = f"forge-{secrets.token_hex(3)}"
        made.append(realm_id)
        return build_realm(
            realm_id,
            name="forge-test",
            agents=[{"id": "alpha"}, {"id": "bravo"}],
            state=state,
            root=tmp_path / "packages",
        )

    yield make
    for realm_id in made:
        stop_realm_sandboxes(realm_id, "test over")
        release_realm(realm_id)


def script_request(agent_id: str, script: str, *args: str) -> AgentSandboxRequest:
    """A sandbox whose 'runtime' is a script placed in its home's resources."""
    return AgentSandboxRequest(
        agent_id=agent_id,
        birth_config=birth_config(agent_id),
        resources={"probe.py": script},
        argv=[sys.executable, f"{layout.SANDBOX_HOME}/resources/probe.py", *args],
    )


def waiting_runtime(agent_id: str) -> AgentSandboxRequest:
    """The real runtime, started before its birth config exists (as provisioning does)."""
    return AgentSandboxRequest(
        agent_id=agent_id, birth_config=None, argv=runtime_argv(await_birth_s=60)
    )


def start(realm_id: str, requests: list[AgentSandboxRequest], **kwargs: Any) -> list[Sandbox]:
    kwargs.setdefault("limits", SMALL)
    return start_agent_sandboxes(realm_id, requests, **kwargs)


def wait_for_file(path: Path, timeout: float = 30.0, done: str | None = None) -> str:
    """The file's text once it holds ``done``, or, without ``done``, once it is written: not
    empty, and the same on two reads a poll apart. A probe's ``open(p, "w").write(x)``
    creates the file before it writes, so a read in between finds it empty."""
    deadline = time.monotonic() + timeout
    last: str | None = None
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text(encoding="utf-8", errors="replace")
            if done is not None and done in text:
                return text
            if done is None and text and text == last:
                return text
            last = text
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear (with {done!r}) within {timeout} s")


def processes_of(uid: int, expect: int, timeout: float = 5.0) -> list[int]:
    """Live (non-zombie) processes of ``uid``, once their number is down to ``expect``
    or the timeout passes; killed processes take a moment to go on a loaded host."""
    from realms.forge import procs

    deadline = time.monotonic() + timeout
    while True:
        found = [p for p in procs.all_pids() if procs.uid_of(p) == uid and procs.state(p) != "Z"]
        if len(found) <= expect or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


@pytest.fixture
def gateway() -> Iterator[None]:
    """The real model gateway on the sockets directory's ``gateway.sock``."""
    from ledger.gateway.server import GatewayServer

    server = GatewayServer(uds_path=layout.sockets_dir() / "gateway.sock").start()
    yield
    server.stop()


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts: a sandbox reaching it would be a leak."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def planted_secret() -> tuple[str, Path]:
    """A secret the sandbox must never see, and a 0600 file of the platform's holding
    it. The file lives in a directory of the forge tests' own, never at a real key's
    path (the shared test home's keystore belongs to the ledger tests)."""
    needle = f"planted-secret-{secrets.token_hex(12)}"
    place = Path(settings.BEARPIT_HOME) / "forge-tests" / secrets.token_hex(4)
    place.mkdir(parents=True, mode=0o700)
    secret_file = place / "secret.key"
    secret_file.write_text(needle)
    secret_file.chmod(0o600)
    return needle, secret_file


def same_uid_holder(uid: int, gid: int, needle: str) -> subprocess.Popen[bytes]:
    """A host process outside every sandbox, running as ``uid`` with ``needle`` in its
    environment: only the sandbox's pid namespace keeps the agent from reading it."""
    return subprocess.Popen(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "sleep", "120"],
        env={"PATH": "/usr/bin:/bin", "BEARPIT_PLANTED_SECRET": needle},
    )


def escape_targets(
    realm_id: str, port: int, needle: str, secret_file: Path, pids: list[int]
) -> dict[str, object]:
    """What the escape probes (probes.ESCAPES) must fail to reach: the listener, another
    agent's home and birth config, a secret file, the database, BEARPIT_HOME, and the
    environments of ``pids`` (host processes holding ``needle``)."""
    home = Path(settings.BEARPIT_HOME)
    return {
        "port": port,
        "other": [
            str(layout.home_dir(realm_id, "bravo")),
            str(layout.home_dir(realm_id, "bravo") / ".bearpit" / "birth.json"),
            "/home/bravo",
        ],
        "keystore": str(secret_file),
        "database": str(connection.settings_dict["NAME"]),
        "bearpit_home": str(home),
        "needle": needle,
        "pids": [str(pid) for pid in pids],
    }
