"""The kickoff post that opens a realm's Commons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def kickoff_text(project: Mapping[str, Any], run_config: Mapping[str, Any]) -> str:
    """Realm name, goals, guidelines and how turns and the referee work."""
    meta = project.get("metadata") or {}
    spec = project.get("spec") or {}
    lines = [f"Welcome to the realm “{meta.get('name', 'realm')}”."]
    goals = spec.get("goals") or []
    if goals:
        lines.append("Goals:")
        lines.extend(f"- {goal}" for goal in goals)
    if spec.get("guidelines"):
        lines.append("Guidelines:")
        lines.append(str(spec["guidelines"]).strip())
    referee = run_config.get("referee")
    turns = run_config.get("turns")
    if turns:
        lines.append(
            "Turns: one participant at a time, in roster order. When the floor is yours you "
            "will be told; do your tool work first, then post one message to pass the floor."
        )
    if referee:
        lines.append(f"The referee is {referee}; its tools decide outcomes.")
    return "\n".join(lines)


def kickoff_mentions(run_config: Mapping[str, Any]) -> list[str]:
    """Who the kickoff addresses (format §2.2, ``referee_opens``).

    A driving referee alone, with or without turns: it opens the realm and wakes the
    players itself (a machine's wakes, the rotation's grants). Otherwise nobody when
    the realm takes turns (grants follow), else everyone.
    """
    referee = run_config.get("referee")
    if run_config.get("referee_opens") and referee:
        return [str(referee)]
    if run_config.get("turns"):
        return []
    return [a["id"] for a in run_config.get("agents") or []]
