"""``budget_status``: what the caller has spent on models and what is left."""

from __future__ import annotations

from typing import Any

from ledger.services.spend import realm_spend
from realms.realmtools.context import Caller


def budget_status(caller: Caller) -> dict[str, Any]:
    usage = realm_spend(caller.realm_id).get(caller.agent_id)
    if usage is None:
        return {"spent_usd": 0.0, "cap_usd": None, "remaining_usd": None, "exhausted": False}
    cap = None if usage.cap_usd is None else float(usage.cap_usd)
    spent = float(usage.usd)
    return {
        "spent_usd": round(spent, 6),
        "cap_usd": cap,
        "remaining_usd": None if cap is None else round(max(0.0, cap - spent), 6),
        "exhausted": usage.exhausted,
        "tokens_in": usage.tokens_in,
        "tokens_out": usage.tokens_out,
    }
