"""run_code through realmtools, executed in the caller's real bwrap sandbox."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.forge import layout
from realms.forge.services import release_realm, stop_realm_sandboxes
from tests.realms.forge.conftest import UID_BASE, script_request, start

pytestmark = pytest.mark.timeout(120)

SLEEPER = "import time; time.sleep(300)"


@pytest.fixture
def sandboxed(realms, settings):
    settings.BEARPIT_SANDBOX = "bwrap"
    settings.BEARPIT_SANDBOX_UID_BASE = UID_BASE
    settings.BEARPIT_SANDBOX_UID_COUNT = 500
    layout.sockets_dir().mkdir(parents=True, exist_ok=True)
    realm = realms()
    start(realm.realm_id, [script_request("orin", SLEEPER)])
    yield realm
    stop_realm_sandboxes(realm.realm_id, "test over")
    release_realm(realm.realm_id)


def _events(realm, kind):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=kind)]


def test_code_runs_in_the_callers_sandbox_and_is_chronicled(realms, sandboxed, settings):
    orin = realms.agent(sandboxed, "orin")
    result = orin.call("run_code", code="import os; print(6 * 7, os.getuid() != 0)")
    assert result == {"exit_code": 0, "output": "42 True\n"}
    leak = orin.call("run_code", code=f"print('{orin.token}')")
    assert orin.token not in leak["output"]
    assert "[redacted]" in leak["output"]

    execs, results = _events(sandboxed, Kind.EXEC), _events(sandboxed, Kind.EXEC_RESULT)
    assert [e["id"] for e in execs] == [r["id"] for r in results]
    assert len(execs[0]["id"]) == 16
    assert results[0] == {
        "id": execs[0]["id"],
        "agent": "orin",
        "exit_code": 0,
        "output": "42 True\n",
    }
    assert orin.token not in execs[1]["code"]

    settings.BEARPIT_SANDBOX_EXEC_TIMEOUT = 2
    slow = orin.call("run_code", code="import time; time.sleep(30)")
    assert slow == {"error": "the code did not finish in time", "exit_code": None, "output": ""}
    assert _events(sandboxed, Kind.EXEC_RESULT)[-1]["exit_code"] is None


def test_without_a_running_sandbox_nothing_runs(realms, sandboxed):
    vela = realms.agent(sandboxed, "vela")
    assert "not running" in vela.call("run_code", code="print(1)")["error"]
    assert "empty" in vela.call("run_code", code="  ")["error"]
    assert _events(sandboxed, Kind.EXEC) == []
