"""examples/pot-split: private deals under a per-round DM quota, exact sums with run_code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pot-split"
PARTNERS = ("ada", "bram", "cleo")
CLAIMS = {"ada": "466.67", "bram": "333.33", "cleo": "200.00"}


def delivered(body: str) -> str:
    """A DM as delivered: the recipient's Matrix mention, then ``@<id> text``."""
    return body.split(" ", 1)[1] if body.startswith("@bp_") else body


def test_pot_split_private_deals_under_quota_and_an_exact_payout(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # A DM room for every pair of partners, none with the notary.
    running = chron.kinds("lifecycle")[1]
    assert sorted(running["side_channels"].values()) == ["ada · bram", "ada · cleo", "bram · cleo"]

    # Every send_private is recorded; ada's second one in round 1 is over her quota of one,
    # so it is kept back, and the notice says so in the Commons.
    privates = [(p["from"], p["to"]) for p in chron.kinds("private")]
    assert privates == [("ada", "bram"), ("ada", "cleo"), ("bram", "cleo"), ("cleo", "ada")]
    dms = {a: [delivered(b).split(" ", 1)[0] for b in run.said(a) if "@" in b] for a in PARTNERS}
    assert dms == {"ada": ["@bram"], "bram": ["@cleo"], "cleo": ["@ada"]}
    notices = [b for b in run.system_posts() if b.startswith("🔇")]
    assert notices == [
        "🔇 ada has used this round's 1 private message(s); further ones this round are "
        "recorded but not delivered."
    ]
    bodies = [body for _who, body, _eid in chron.messages]
    assert not [b for b in bodies if "Will you claim 200.00?" in b]

    # run_code did the arithmetic, in each caller's own sandbox.
    results = [(r["agent"], r["exit_code"], r["output"]) for r in chron.kinds("exec_result")]
    assert results == [
        ("ada", 0, "{'ada': '466.67', 'bram': '333.33', 'cleo': '200.00'} total 1000.00\n"),
        ("cleo", 0, "total 1000.00 fits True\n"),
        ("notary", 0, "total 1000.00 fits True\n"),
    ]
    (notary_exec,) = [e for e in chron.kinds("exec") if e["agent"] == "notary"]
    assert all(f'"{who}": "{claim}"' in notary_exec["code"] for who, claim in CLAIMS.items())

    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [("claims", p) for p in PARTNERS]
    (reveal,) = chron.kinds("reveal")
    assert reveal == {"round": "claims", "submissions": CLAIMS}

    scores = [(s["agent"], s["delta"]) for s in chron.kinds("score")]
    assert scores == [(p, float(c)) for p, c in CLAIMS.items()]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "the pot is split: ada 466.67, bram 333.33, cleo 200.00"
    assert verdict["issued_by"] == "notary"
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2]
    last_seal, revealed, paid, ruled = run.order(
        ("sealed_submit", {"agent": "cleo"}),
        ("reveal", {}),
        ("score", {"agent": "cleo"}),
        ("verdict", {}),
    )
    assert last_seal < revealed < paid < ruled
