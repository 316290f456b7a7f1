"""Tally rulesets: pure functions from sealed submissions to a result.

Every ruleset takes ``{agent: payload}`` and the referee's config and returns
``{result, kind, detail}`` where kind is ``agent``, ``option`` or ``tie``.
Custom rulesets register under ``custom:<name>`` through :func:`register`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from realms.realmtools.errors import Refusal


class TallyResult(TypedDict):
    result: str | None
    kind: str
    detail: dict[str, Any]


Ruleset = Callable[[Mapping[str, str], Mapping[str, Any]], TallyResult]

_CUSTOM: dict[str, Ruleset] = {}


def _tie(detail: dict[str, Any]) -> TallyResult:
    return {"result": None, "kind": "tie", "detail": detail}


def dominance(submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    """The winner's token beats every other submitted token (rock-paper-scissors)."""
    beats_raw = config.get("beats")
    if not isinstance(beats_raw, Mapping) or not beats_raw:
        raise Refusal("dominance needs config.beats = {token: [tokens it beats]}")
    beats = {
        str(k).strip().lower(): {str(v).strip().lower() for v in (vs or [])}
        for k, vs in beats_raw.items()
    }
    tokens = {agent: payload.strip().lower() for agent, payload in submissions.items()}
    detail: dict[str, Any] = {"tokens": tokens}
    winners = [
        agent
        for agent, token in tokens.items()
        if token in beats
        and all(other == agent or tokens[other] in beats[token] for other in tokens)
    ]
    if len(winners) == 1:
        return {"result": winners[0], "kind": "agent", "detail": detail}
    return _tie(detail)


def _bids(submissions: Mapping[str, str]) -> dict[str, int]:
    bids: dict[str, int] = {}
    for agent, payload in submissions.items():
        try:
            bids[agent] = int(payload.strip())
        except ValueError:
            raise Refusal(f"{agent}'s submission {payload.strip()!r} is not an integer") from None
    return bids


def _extreme_bid(submissions: Mapping[str, str], pick: Callable[..., int]) -> TallyResult:
    bids = _bids(submissions)
    if not bids:
        return _tie({"bids": bids})
    best = pick(bids.values())
    # ``winning_bid`` is the reference's key: its packages' referees are told to read it.
    holders = [agent for agent, bid in bids.items() if bid == best]
    if len(holders) == 1:
        return {
            "result": holders[0],
            "kind": "agent",
            "detail": {"bids": bids, "winning_bid": best},
        }
    return _tie({"bids": bids, "winning_bid": best, "tied": sorted(holders)})


def high_bid(submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    return _extreme_bid(submissions, max)


def low_bid(submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    return _extreme_bid(submissions, min)


def _counts(submissions: Mapping[str, str]) -> Counter[str]:
    return Counter(payload.strip() for payload in submissions.values())


def plurality(submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    counts = _counts(submissions)
    detail: dict[str, Any] = {"counts": dict(counts)}
    ranked = counts.most_common()
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        return {"result": ranked[0][0], "kind": "option", "detail": detail}
    return _tie(detail)


def majority(submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    counts = _counts(submissions)
    detail: dict[str, Any] = {"counts": dict(counts), "needed": len(submissions) // 2 + 1}
    for option, count in counts.items():
        if count * 2 > len(submissions):
            return {"result": option, "kind": "option", "detail": detail}
    return _tie(detail)


def unanimous(submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    counts = _counts(submissions)
    detail: dict[str, Any] = {"counts": dict(counts)}
    if len(counts) == 1:
        return {"result": next(iter(counts)), "kind": "option", "detail": detail}
    return _tie(detail)


BUILTIN: dict[str, Ruleset] = {
    "dominance": dominance,
    "high-bid": high_bid,
    "low-bid": low_bid,
    "plurality": plurality,
    "majority": majority,
    "unanimous": unanimous,
}


def register(name: str, ruleset: Ruleset) -> None:
    """Register ``custom:<name>``; built-in names cannot be replaced."""
    if not name or ":" in name:
        raise ValueError(f"custom ruleset name {name!r} must be non-empty and have no ':'")
    _CUSTOM[name] = ruleset


def unregister(name: str) -> None:
    _CUSTOM.pop(name, None)


def known() -> list[str]:
    return [*BUILTIN, *(f"custom:{name}" for name in sorted(_CUSTOM))]


def resolve(name: str) -> Ruleset:
    if name in BUILTIN:
        return BUILTIN[name]
    if name.startswith("custom:") and name[len("custom:") :] in _CUSTOM:
        return _CUSTOM[name[len("custom:") :]]
    raise Refusal(f"unknown ruleset {name!r}; known: {', '.join(known())}")


def tally(name: str, submissions: Mapping[str, str], config: Mapping[str, Any]) -> TallyResult:
    return resolve(name)(submissions, config)
