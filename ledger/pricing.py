"""Token prices and costs.

Prices come from the virtual key (the profile or the scenario's explicit model) and, when
those are absent, from LiteLLM's bundled price table, read as JSON without importing
LiteLLM (which takes seconds and hundreds of megabytes).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

from ledger.models import NANO

_TABLE = "model_prices_and_context_window_backup.json"


@functools.cache
def _cost_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / _TABLE
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        return {}
    return data


def table_prices(model: str, litellm_provider: str = "") -> tuple[Decimal, Decimal] | None:
    """(input, output) USD per token from LiteLLM's table, or None if it does not know."""
    table = _cost_map()
    for name in (f"{litellm_provider}/{model}" if litellm_provider else "", model):
        entry = table.get(name) if name else None
        if entry and "input_cost_per_token" in entry and "output_cost_per_token" in entry:
            return (
                Decimal(str(entry["input_cost_per_token"])),
                Decimal(str(entry["output_cost_per_token"])),
            )
    return None


def cost_nusd(
    tokens_in: int, tokens_out: int, input_price: Decimal | None, output_price: Decimal | None
) -> int:
    """Cost in whole nano-dollars, rounded up so metering never undercharges."""
    usd = Decimal(tokens_in) * (input_price or 0) + Decimal(tokens_out) * (output_price or 0)
    return int((usd * NANO).to_integral_value(rounding=ROUND_CEILING))


def to_usd(nusd: int) -> Decimal:
    return Decimal(nusd) / NANO


def cap_nusd(usd: Decimal) -> int:
    """A cap in whole nano-dollars, rounded down so a cap is never loosened."""
    return int((usd * NANO).to_integral_value(rounding=ROUND_FLOOR))
