"""The launch snapshot wires realmtools for a granted tool alone, as the package check does."""

from __future__ import annotations

from realms.services.launch import realmtools_wired


def test_a_granted_tool_alone_wires_realmtools() -> None:
    solo = [{"id": "scout", "role": "participant"}]
    assert realmtools_wired({}, solo) is False
    assert realmtools_wired({}, [{**solo[0], "tools": ["web_fetch"]}]) is True
    assert realmtools_wired({"provide_tools": False}, [{**solo[0], "tools": ["web_fetch"]}]) is False
