"""Who a transcript line names as its author."""

from __future__ import annotations

from realms.console.feed import speaker


def test_an_agent_is_named_by_its_id_and_the_platform_as_bearpit() -> None:
    assert speaker("@bp-ann:bearpit.local", "ann") == "ann"
    assert speaker("@bp_system:bearpit.local", "") == "Bearpit"
    # Only the platform's own user: a look-alike keeps its full bus id.
    assert speaker("@bp_system_x:bearpit.local", "") == "@bp_system_x:bearpit.local"
    assert speaker("@someone:elsewhere", "") == "@someone:elsewhere"
