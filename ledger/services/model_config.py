"""The operator's edits of provider profiles' tiers (``PUT /api/settings/model-config``).

An edit names providers and, for each, the tiers it replaces: a tier given is stored as
given (fields left out become empty), tiers not given stay as they are. Every edit of
one request is checked before any is saved, so a request with one bad entry changes
nothing. Profiles an installed package provides (the ``bearpit.providers`` entry point)
are that package's to change, not the operator's: they are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from pydantic import ValidationError

from ledger.models import ProviderProfile
from ledger.services.profiles import TIERS, TierSpec, all_profiles


class ModelConfigError(ValueError):
    """One entry of an edit is wrong; ``field`` locates it. Nothing was saved."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _tier(where: str, data: object, *, per_token: bool, provider: str) -> dict[str, Any]:
    try:
        spec = TierSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        inner = ".".join(str(p) for p in first["loc"])
        raise ModelConfigError(f"{where}.{inner}" if inner else where, first["msg"]) from exc
    for name in ("input_cost_per_token", "output_cost_per_token"):
        if per_token and getattr(spec, name) == 0:
            # The gateway would refuse to mint a key at a zero price anyway: say so now.
            raise ModelConfigError(
                f"{where}.{name}",
                f"a price of 0 is only for flat-rate providers; {provider!r} bills per token",
            )
    data = spec.model_dump()
    # The tool mode and reply bound are stored only when given, so a tier edited as it
    # was stored compares equal to it (rows written before these fields have neither).
    for name in ("tool_mode", "max_output_tokens"):
        if name not in spec.model_fields_set:
            data.pop(name)
    return data


def _checked(
    providers: Mapping[str, object],
) -> list[tuple[ProviderProfile, dict[str, dict[str, Any]]]]:
    if not providers:
        raise ModelConfigError("providers", "name at least one provider")
    known = all_profiles()
    rows = {r.name: r for r in ProviderProfile.objects.select_for_update().filter(name__in=known)}
    edits = []
    for name, entry in providers.items():
        where = f"providers.{name}"
        profile = known.get(name)
        if profile is None:
            raise ModelConfigError(where, f"no such provider (known: {', '.join(sorted(known))})")
        row = rows.get(name)
        if profile.source == "plugin" or row is None:
            raise ModelConfigError(
                where, "this profile comes from an installed package; change it there"
            )
        if not isinstance(entry, Mapping) or set(entry) != {"categories"}:
            raise ModelConfigError(where, "expected {categories: {tier: {model, …}}}")
        categories = entry["categories"]
        if not isinstance(categories, Mapping) or not categories:
            raise ModelConfigError(f"{where}.categories", "name at least one tier")
        per_token = not profile.flat_rate and profile.transport != "scripted"
        tiers = {}
        for tier, data in categories.items():
            if tier not in TIERS:
                raise ModelConfigError(
                    f"{where}.categories.{tier}", f"unknown tier (tiers: {', '.join(TIERS)})"
                )
            tiers[tier] = _tier(
                f"{where}.categories.{tier}", data, per_token=per_token, provider=name
            )
        edits.append((row, tiers))
    return edits


@transaction.atomic
def save_model_config(providers: Mapping[str, object]) -> list[str]:
    """Replace the tiers named in ``providers``; the names of the profiles changed.

    Raises :class:`ModelConfigError` before anything is written.
    """
    changed = []
    for row, tiers in _checked(providers):
        categories = dict(row.categories or {})
        categories.update(tiers)
        ordered = {t: categories[t] for t in TIERS if t in categories}
        if ordered == row.categories:
            continue
        row.categories = ordered
        row.source = ProviderProfile.Source.USER
        row.save(update_fields=["categories", "source", "updated_at"])
        changed.append(row.name)
    return changed
