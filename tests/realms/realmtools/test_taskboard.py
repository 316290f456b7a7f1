"""The task board over the real realmtools socket: claims, dependencies, leases, leads."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from chronicle.report import render_report
from realms.plan import plan_of
from realms.realmtools.models import Task
from realms.realmtools.taskboard_leases import expire_leases
from realms.warden import termination
from realms.warden.snapshot import build_snapshot

from .test_concurrency_and_audit import _together

pytestmark = pytest.mark.timeout(90)

BOARD = {"mechanics": [{"kind": "task-board", "lease": "30s", "leads": ["vela"]}]}
TASK_TOOLS = {
    "task_add",
    "task_list",
    "task_claim",
    "task_release",
    "task_complete",
    "task_block",
}


def _ops(realm_id: str) -> list[tuple[str, int]]:
    events = Event.objects.filter(realm_id=realm_id, kind=Kind.TASK).order_by("id")
    return [(e.payload["op"], e.payload["task"]) for e in events]


def test_racing_claims_grant_each_task_once(realms):
    realm = realms(spec=BOARD)
    orin, vela, zed = (realms.agent(realm, a) for a in ("orin", "vela", "zed"))
    orin.call("task_add", title="write the outline")
    orin.call("task_add", title="draw the map")
    racers = [(agent, "task_claim", {"id": n}) for n in (1, 2) for agent in (orin, vela, zed)]
    results = _together(*racers, *racers)
    granted = [r["claimed"] for r in results if "claimed" in r]
    refused = [r["error"] for r in results if "error" in r]
    assert sorted(g["id"] for g in granted) == [1, 2]
    assert len(refused) == len(results) - 2
    rows = {t.number: t.claimant for t in Task.objects.filter(realm=realm)}
    assert rows == {g["id"]: g["claimant"] for g in granted}
    claims = sorted(op for op in _ops(realm.realm_id) if op[0] == "claim")
    assert claims == [("claim", 1), ("claim", 2)]


def test_a_task_cannot_be_claimed_while_its_dependencies_are_open(realms):
    realm = realms(spec=BOARD)
    orin, zed = realms.agent(realm, "orin"), realms.agent(realm, "zed")
    orin.call("task_add", title="gather sources")
    added = orin.call("task_add", title="write the brief", depends_on=[1])
    assert added["added"]["waiting_on"] == [1]
    assert "waits on tasks not done yet: 1" in zed.call("task_claim", id=2)["error"]
    assert zed.call("task_list", filter="open")["tasks"][0]["id"] == 1
    unknown = orin.call("task_add", title="x", depends_on=[9])
    assert "do not exist: 9" in unknown["error"]
    orin.call("task_claim", id="T1")
    assert "only the claimant" in zed.call("task_complete", id=1, summary="done")["error"]
    assert orin.call("task_complete", id=1, summary="three sources in shared/")["completed"] == 1
    assert zed.call("task_claim", id=2)["claimed"]["claimant"] == "zed"
    assert _ops(realm.realm_id) == [
        ("add", 1),
        ("add", 2),
        ("claim", 1),
        ("complete", 1),
        ("claim", 2),
    ]


def test_the_warden_expires_a_stale_lease_and_the_task_returns_to_the_pool(realms):
    realm = realms(spec=BOARD)
    orin, vela = realms.agent(realm, "orin"), realms.agent(realm, "vela")
    orin.call("task_add", title="index the notes")
    orin.call("task_claim", id=1)
    board = plan_of(realm).task_board
    assert board is not None and board.lease_s == 30
    held = Task.objects.get(realm=realm, number=1)
    assert held.lease_until_ms is not None
    # Still inside the lease: nothing happens.
    assert expire_leases(realm.realm_id, board, held.lease_until_ms - 1) == []
    # Any call by the claimant renews the lease.
    orin.call("task_list")
    renewed = Task.objects.get(pk=held.pk).lease_until_ms
    assert renewed is not None and renewed > held.lease_until_ms
    # So does a message: said after the lease was last renewed, it keeps the task.
    Message.objects.create(
        realm_id=realm.realm_id, channel="!c", sender="@orin:x", sender_agent="orin",
        body="still indexing", ts_ms=renewed + 20_000,
    )  # fmt: skip
    assert expire_leases(realm.realm_id, board, renewed + 25_000) == []
    assert Task.objects.get(pk=held.pk).lease_until_ms == renewed + 50_000
    # Then silence past the lease: the task goes back to the pool, chronicled.
    assert expire_leases(realm.realm_id, board, renewed + 50_001) == [1]
    task = Task.objects.get(pk=held.pk)
    assert (task.state, task.claimant, task.lease_until_ms) == ("open", "", None)
    expiry = Event.objects.filter(realm_id=realm.realm_id, kind=Kind.TASK).last()
    assert expiry is not None and expiry.payload["op"] == "expire"
    assert expiry.payload["claimant"] == "orin"
    assert vela.call("task_claim", id=1)["claimed"]["claimant"] == "vela"
    assert "only the claimant" in orin.call("task_complete", id=1, summary="late")["error"]


def test_only_the_referee_or_a_lead_assigns(realms):
    realm = realms(spec=BOARD)
    orin, vela, zed = (realms.agent(realm, a) for a in ("orin", "vela", "zed"))
    ref = realms.agent(realm, "themis")
    assert orin.tools() >= TASK_TOOLS and "task_assign" not in orin.tools()
    assert "task_assign" in vela.tools() and "task_assign" in ref.tools()
    refused = orin.call("task_add", title="mine", assignee="orin")
    assert "only the referee or a lead" in refused["error"]
    assert Task.objects.filter(realm=realm).count() == 0
    assert (
        "only the referee or a lead"
        in orin.calls(("task_assign", {"id": 1, "agent": "x"}))[0]["error"]
    )
    assert vela.call("task_add", title="proofread", assignee="zed")["added"]["assignee"] == "zed"
    assert "assigned to zed" in orin.call("task_claim", id=1)["error"]
    assert "task_claim" not in ref.tools()  # the referee does not take tasks
    assert ref.call("task_assign", id=1, agent="orin")["assignee"] == "orin"
    assert "assigned to orin" in zed.call("task_claim", id=1)["error"]
    assert orin.call("task_claim", id=1)["claimed"]["claimant"] == "orin"
    assert "not a participant" in ref.call("task_assign", id=1, agent="themis")["error"]
    blocked = orin.call("task_block", id=1, reason="the draft is missing")
    assert blocked == {"blocked": 1, "reason": "the draft is missing"}
    listed = vela.call("task_list", filter="blocked")["tasks"]
    assert listed[0]["block_reason"] == "the draft is missing" and "claimant" not in listed[0]


def test_tools_are_hidden_without_a_board_and_the_report_shows_the_board(realms):
    plain = realms()
    orin = realms.agent(plain, "orin")
    assert not orin.tools() & TASK_TOOLS
    assert orin.calls(("task_list", {}))[0] == {"error": "this realm has no task board"}
    realm = realms(spec=BOARD)
    orin, zed = realms.agent(realm, "orin"), realms.agent(realm, "zed")
    orin.call("task_add", title="survey the site", detail="north side first")
    orin.call("task_add", title="write it up")
    orin.call("task_claim", id=1)
    orin.call("task_complete", id=1, summary="survey.md in the shared folder")
    zed.call("task_claim", id=2)
    zed.call("task_release", id=2)
    report = render_report(realm.realm_id)
    section = report.split("## Task board", 1)[1].split("\n## ", 1)[0]
    assert "1 of 2 tasks done" in section
    assert "survey the site — done by orin: survey.md in the shared folder" in section
    assert "write it up — open" in section


def test_the_realm_ends_when_every_task_on_the_board_is_done(realms, settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    spec = {**BOARD, "termination": [{"type": "tasks_complete"}]}
    realm = realms(spec=spec)
    orin = realms.agent(realm, "orin")
    conditions = termination.realm_conditions(plan_of(realm))

    def ending() -> termination.Conclusion | None:
        return termination.evaluate(
            build_snapshot(realm.realm_id), conditions, verdict_ends_realm=False
        )

    assert ending() is None  # an empty board is not a finished one
    orin.call("task_add", title="one")
    orin.call("task_add", title="two")
    for n in (1, 2):
        orin.call("task_claim", id=n)
        assert ending() is None
        orin.call("task_complete", id=n, summary=f"part {n} written")
    found = ending()
    assert found is not None and found.reason == "tasks_complete"
    assert found.detail == "all 2 tasks on the board are done"
