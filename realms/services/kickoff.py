"""The kickoff post that opens a realm's Commons."""

from __future__ import annotations

from realms.plan import RealmPlan


def kickoff_text(plan: RealmPlan) -> str:
    """Realm name, goals, guidelines and how turns and the referee work."""
    lines = [f"Welcome to the realm “{plan.name}”."]
    if plan.goals:
        lines.append("Goals:")
        lines.extend(f"- {goal}" for goal in plan.goals)
    if plan.guidelines:
        lines.append("Guidelines:")
        lines.append(plan.guidelines.strip())
    if plan.turns is not None:
        lines.append(
            "Turns: one participant at a time, in roster order. When the floor is yours you "
            "will be told; do your tool work first, then post one message to pass the floor."
        )
    if plan.referee:
        lines.append(f"The referee is {plan.referee}; its tools decide outcomes.")
    return "\n".join(lines)


def kickoff_mentions(plan: RealmPlan) -> list[str]:
    """Who the kickoff addresses (format §2.2, ``referee_opens``).

    A driving referee alone, with or without turns: it opens the realm and wakes the
    players itself (a machine's wakes, the rotation's grants). Otherwise nobody when
    the realm takes turns (grants follow), else everyone.
    """
    if plan.referee_drives and plan.referee is not None:
        return [plan.referee]
    if plan.turns is not None:
        return []
    return list(plan.roster)
