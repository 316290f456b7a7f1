"""A forecast as text lines (the commands) and as a JSON-ready dict (the report file)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from realms.batch.stats import Spread
from realms.forecast.estimate import (
    OUTPUT_TOKENS_PER_CALL,
    PROMPT_GROWTH_PER_CALL,
    SECONDS_PER_CALL,
    Forecast,
)


def _usd(value: float) -> str:
    return f"${value:.4f}"


def _past(s: Spread | None) -> str:
    if s is None:
        return ""
    return f"; past runs median {_usd(s.median)}, p90 {_usd(s.p90)}, max {_usd(s.max)}"


def lines(f: Forecast) -> list[str]:
    out = [f"forecast: {f.package} on provider {f.provider}"]
    for a in f.agents:
        cap = _usd(a.cap_usd) if a.cap_usd is not None else "no cap"
        out.append(
            f"  {a.agent_id} ({a.role}, {a.model}): first request {a.first_request_tokens} "
            f"tokens, {len(a.tools)} tools; {_usd(a.cost_low)} to {_usd(a.cost_high)} "
            f"against cap {cap}{_past(a.past_spend)}"
        )
    limit = f"{f.duration_limit_s:.0f}s" if f.duration_limit_s is not None else "none"
    out.append(
        f"  total: {_usd(f.cost_low)} to {_usd(f.cost_high)}; duration up to "
        f"{f.duration_high_s:.0f}s against time limit {limit}"
        + (f", stall limit {f.stall_limit_s:.0f}s" if f.stall_limit_s is not None else "")
    )
    if f.past_runs and f.past_total is not None:
        duration = (
            f", lasted median {f.past_duration_s.median:.0f}s, max {f.past_duration_s.max:.0f}s"
            if f.past_duration_s is not None
            else ""
        )
        out.append(
            f"  {f.past_runs} past runs: spent median {_usd(f.past_total.median)}, "
            f"max {_usd(f.past_total.max)}{duration}"
        )
    else:
        out.append("  no past runs of this package")
    out.append(f"  binds first: {f.binds_first}")
    out.append(
        f"  assumes {OUTPUT_TOKENS_PER_CALL} output tokens a call, each prompt "
        f"{PROMPT_GROWTH_PER_CALL} tokens larger than the last, a call every "
        f"{SECONDS_PER_CALL:.0f}s"
    )
    out += [f"  note: {n}" for n in f.notes]
    return out


def as_dict(f: Forecast) -> dict[str, Any]:
    return asdict(f)
