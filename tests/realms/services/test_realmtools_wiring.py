"""The launch snapshot wires realmtools for a granted tool alone, as the package check does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from realms.services.launch import realmtools_wired


def test_a_granted_tool_alone_wires_realmtools() -> None:
    scout: Mapping[str, Any] = {"id": "scout", "role": "participant"}
    granted: list[Mapping[str, Any]] = [{**scout, "tools": ["web_fetch"]}]
    assert realmtools_wired({}, [scout]) is False
    assert realmtools_wired({}, granted) is True
    assert realmtools_wired({"provide_tools": False}, granted) is False
