"""Provider profiles, the active provider, and tier → model resolution (format §5.1)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ledger.local_server import local_api_base, model_alias
from ledger.models import LedgerSetting, ProviderProfile

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "bearpit.providers"
ACTIVE_PROVIDER_KEY = "active_provider"
DEFAULT_PROVIDER = "azure"
TIERS = ("small", "medium", "large")
LOCAL_PROVIDER = "local"


class ProfileError(ValueError):
    """A profile is missing or malformed; the message says which and where."""


class TierSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=200)
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    input_cost_per_token: float | None = Field(default=None, ge=0, le=1)
    output_cost_per_token: float | None = Field(default=None, ge=0, le=1)
    context_length: int | None = Field(default=None, ge=1, le=100_000_000)
    # How the model is asked for tool calls: native tool calling, a constrained JSON reply,
    # or native until the model's first reply shows it answers tools in JSON (runtime/model).
    tool_mode: Literal["native", "json", "auto"] = "native"
    max_output_tokens: int | None = Field(default=None, ge=16, le=1_000_000)


class ProfileSpec(BaseModel):
    """The plain-data shape of a profile (entry points and the API speak it)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=60)
    label: str = ""
    description: str = ""
    transport: Literal["openai", "litellm", "scripted"] = "litellm"
    litellm_provider: str = ""
    api_base: str = ""
    api_key_ref: str = ""
    setup_hint: str = ""
    categories: dict[Literal["small", "medium", "large"], TierSpec]
    flat_rate: bool = False
    min_budget_usd: float | None = Field(default=None, ge=0)
    min_turn_seconds: float | None = Field(default=None, ge=0)


@dataclass(frozen=True)
class Tier:
    model: str
    effort: str | None
    input_cost_per_token: Decimal | None
    output_cost_per_token: Decimal | None
    context_length: int | None
    tool_mode: str = "native"
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    transport: str
    categories: dict[str, Tier]
    label: str = ""
    description: str = ""
    litellm_provider: str = ""
    api_base: str = ""
    api_key_ref: str = ""
    setup_hint: str = ""
    flat_rate: bool = False
    min_budget_usd: Decimal | None = None
    min_turn_seconds: float | None = None
    source: str = "user"


@dataclass(frozen=True)
class ResolvedModel:
    """What an agent's model resolved to; everything needed to mint its key."""

    provider: str
    model: str
    transport: str
    litellm_provider: str = ""
    api_base: str = ""
    credential_handle: str = ""
    effort: str | None = None
    input_cost_per_token: Decimal | None = None
    output_cost_per_token: Decimal | None = None
    context_length: int | None = None
    tool_mode: str = "native"
    max_output_tokens: int | None = None
    cap_usd: Decimal | None = None
    on_exhausted: str = "starve"
    min_turn_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _dec(value: object) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _tier(data: Mapping[str, Any]) -> Tier:
    return Tier(
        model=str(data["model"]),
        effort=data.get("effort"),
        input_cost_per_token=_dec(data.get("input_cost_per_token")),
        output_cost_per_token=_dec(data.get("output_cost_per_token")),
        context_length=data.get("context_length"),
        tool_mode=str(data.get("tool_mode") or "native"),
        max_output_tokens=data.get("max_output_tokens"),
    )


def profile_from_spec(spec: ProfileSpec, *, source: str) -> Profile:
    cats = {k: _tier(v.model_dump()) for k, v in spec.categories.items()}
    return Profile(
        name=spec.name,
        transport=spec.transport,
        categories={t: cats[t] for t in TIERS if t in cats},
        label=spec.label,
        description=spec.description,
        litellm_provider=spec.litellm_provider,
        api_base=spec.api_base,
        api_key_ref=spec.api_key_ref,
        setup_hint=spec.setup_hint,
        flat_rate=spec.flat_rate,
        min_budget_usd=_dec(spec.min_budget_usd),
        min_turn_seconds=spec.min_turn_seconds,
        source=source,
    )


def profile_from_row(row: ProviderProfile) -> Profile:
    return Profile(
        name=row.name,
        transport=row.transport,
        categories={t: _tier(row.categories[t]) for t in TIERS if t in (row.categories or {})},
        label=row.label,
        description=row.description,
        litellm_provider=row.litellm_provider,
        api_base=row.api_base,
        api_key_ref=row.api_key_ref,
        setup_hint=row.setup_hint,
        flat_rate=row.flat_rate,
        min_budget_usd=row.min_budget_usd,
        min_turn_seconds=row.min_turn_seconds,
        source=row.source,
    )


def validate_categories(categories: object) -> None:
    """Raise ProfileError with a located message when a categories table is malformed."""
    try:
        ProfileSpec.model_validate({"name": "x", "categories": categories})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ProfileError(f"{where}: {first['msg']}") from exc


def _specs_from_object(obj: object, origin: str) -> list[ProfileSpec]:
    if callable(obj):
        obj = obj()
    items: list[Any]
    if isinstance(obj, Mapping):
        items = [{"name": k, **v} if "name" not in v else dict(v) for k, v in obj.items()]
    elif isinstance(obj, list | tuple):
        items = list(obj)
    else:
        raise ProfileError(f"{origin}: expected a mapping or list of profiles")
    specs = []
    for item in items:
        try:
            specs.append(ProfileSpec.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            name = item.get("name", "?") if isinstance(item, Mapping) else "?"
            raise ProfileError(f"{origin}: profile {name}: {where}: {first['msg']}") from exc
    return specs


def load_plugin_profiles(
    eps: Callable[[], list[EntryPoint]] | None = None,
) -> dict[str, Profile]:
    """Profiles installed packages offer through the ``bearpit.providers`` entry point.

    An entry point names a mapping ``name -> profile dict``, a list of profile dicts, or a
    callable returning either.
    """
    found = eps() if eps is not None else list(entry_points(group=ENTRY_POINT_GROUP))
    out: dict[str, Profile] = {}
    for ep in found:
        origin = f"entry point {ep.name} ({ep.value})"
        try:
            obj = ep.load()
        except Exception as exc:
            raise ProfileError(f"{origin}: cannot load: {exc}") from exc
        for spec in _specs_from_object(obj, origin):
            out[spec.name] = profile_from_spec(spec, source="plugin")
    return out


def all_profiles() -> dict[str, Profile]:
    """Database profiles, with plugin profiles added (a plugin may override by name)."""
    out = {row.name: profile_from_row(row) for row in ProviderProfile.objects.all()}
    out.update(load_plugin_profiles())
    if LOCAL_PROVIDER in out and settings.BEARPIT_LOCAL_MODEL:
        out[LOCAL_PROVIDER] = served_locally(out[LOCAL_PROVIDER])
    return out


def served_locally(profile: Profile) -> Profile:
    """The `local` profile while the platform serves ``BEARPIT_LOCAL_MODEL`` itself.

    Every tier is that one model, at the embedded server's address, asked for tools in
    JSON (a GGUF's chat template rarely knows tool calls), within the server's per-slot
    context and reply bound, paced for a slow machine. It stays flat-rate.
    """
    # The profile's own (nominal) prices stay, so token caps keep counting; none is 0.
    priced = profile.categories.get("medium") or next(iter(profile.categories.values()), None)
    served = Tier(
        model=model_alias(str(settings.BEARPIT_LOCAL_MODEL)),
        effort=None,
        input_cost_per_token=(priced.input_cost_per_token if priced else None) or Decimal(0),
        output_cost_per_token=(priced.output_cost_per_token if priced else None) or Decimal(0),
        context_length=int(settings.BEARPIT_LOCAL_CONTEXT),
        tool_mode="json",
        max_output_tokens=int(settings.BEARPIT_LOCAL_MAX_TOKENS),
    )
    return replace(
        profile,
        api_base=local_api_base(),
        categories={tier: served for tier in TIERS},
        flat_rate=True,
        min_turn_seconds=max(
            profile.min_turn_seconds or 0.0, float(settings.BEARPIT_LOCAL_MIN_TURN_SECONDS)
        ),
    )


def providers_using_handle(handle: str) -> list[str]:
    """The profiles whose key is stored under ``handle``, by name."""
    return sorted(name for name, p in all_profiles().items() if p.api_key_ref == handle)


def get_profile(name: str) -> Profile:
    profiles = all_profiles()
    if name not in profiles:
        raise ProfileError(f"provider {name!r}: no such profile (known: {', '.join(profiles)})")
    return profiles[name]


def stored_provider() -> str:
    row = LedgerSetting.objects.filter(key=ACTIVE_PROVIDER_KEY).first()
    if row is not None and isinstance(row.value, dict) and row.value.get("name"):
        return str(row.value["name"])
    return DEFAULT_PROVIDER


def active_provider_name() -> str:
    override: str | None = settings.BEARPIT_PROVIDER
    return override or stored_provider()


def active_profile() -> Profile:
    """The profile every launch resolves tiers against (``BEARPIT_PROVIDER`` overrides)."""
    return get_profile(active_provider_name())


@transaction.atomic
def set_active_profile(name: str) -> Profile:
    profile = get_profile(name)
    LedgerSetting.objects.update_or_create(
        key=ACTIVE_PROVIDER_KEY, defaults={"value": {"name": profile.name}}
    )
    return profile


def _pick_tier(profile: Profile, category: str) -> Tier:
    if category in profile.categories:
        return profile.categories[category]
    if "medium" in profile.categories:
        return profile.categories["medium"]
    if profile.categories:
        return next(iter(profile.categories.values()))
    raise ProfileError(f"provider {profile.name!r}: defines no model tiers")


def effective_cap(
    budget: Mapping[str, Any] | None,
    input_price: Decimal | None,
    output_price: Decimal | None,
) -> Decimal | None:
    """The tighter of ``max_usd`` and ``max_tokens`` x max(in, out) price; None = uncapped."""
    budget = budget or {}
    caps: list[Decimal] = []
    if budget.get("max_usd") is not None:
        caps.append(Decimal(str(budget["max_usd"])))
    if budget.get("max_tokens") is not None:
        prices = [p for p in (input_price, output_price) if p is not None]
        if prices:
            caps.append(int(budget["max_tokens"]) * max(prices))
    return min(caps) if caps else None


def resolve_agent_model(agent: Mapping[str, Any], profile: Profile) -> ResolvedModel:
    """Resolve one agent (plain ``agent.json`` data) against ``profile``.

    An explicit ``model`` wins; otherwise the tier (fallback ``medium``, then the first
    defined). Policy fields only ever raise: with ``flat_rate`` a cap below
    ``min_budget_usd`` is raised to it.
    """
    budget = agent.get("budget") or {}
    on_exhausted = str(budget.get("on_exhausted") or "starve")
    explicit = agent.get("model")
    if explicit:
        provider_name = str(explicit["provider"])
        home = profile if provider_name == profile.name else all_profiles().get(provider_name)
        tier = Tier(
            model=str(explicit["model"]),
            effort=explicit.get("effort"),
            input_cost_per_token=_dec(explicit.get("input_cost_per_token")),
            output_cost_per_token=_dec(explicit.get("output_cost_per_token")),
            context_length=explicit.get("context_length"),
        )
        credential = str(explicit.get("api_key_ref") or (home.api_key_ref if home else ""))
    else:
        home = profile
        provider_name = profile.name
        tier = _pick_tier(profile, str(agent.get("model_category") or "medium"))
        credential = profile.api_key_ref
    cap = effective_cap(budget, tier.input_cost_per_token, tier.output_cost_per_token)
    if (
        cap is not None
        and home is not None
        and home.flat_rate
        and home.min_budget_usd is not None
        and cap < home.min_budget_usd
    ):
        cap = home.min_budget_usd
    return ResolvedModel(
        provider=provider_name,
        model=tier.model,
        transport=home.transport if home else "litellm",
        litellm_provider=(home.litellm_provider if home else provider_name),
        api_base=home.api_base if home else "",
        credential_handle=credential,
        effort=tier.effort,
        input_cost_per_token=tier.input_cost_per_token,
        output_cost_per_token=tier.output_cost_per_token,
        context_length=tier.context_length,
        tool_mode=tier.tool_mode,
        max_output_tokens=tier.max_output_tokens,
        cap_usd=cap,
        on_exhausted=on_exhausted,
        min_turn_seconds=home.min_turn_seconds if home else None,
    )


def floor_silence_timeout(silence_timeout_s: float, profile: Profile) -> float:
    """``min_turn_seconds`` only ever raises the turn silence timeout."""
    if profile.min_turn_seconds is None:
        return silence_timeout_s
    return max(silence_timeout_s, profile.min_turn_seconds)


@transaction.atomic
def seed_profiles(*, overwrite: bool = False) -> int:
    """Create the seed profiles that are missing (all of them again with ``overwrite``)."""
    from ledger.seed import SEED_PROFILES

    created = 0
    for spec in SEED_PROFILES:
        data = dict(spec)
        name = data.pop("name")
        if overwrite:
            ProviderProfile.objects.update_or_create(
                name=name, defaults={**data, "source": ProviderProfile.Source.SEED}
            )
            created += 1
        elif not ProviderProfile.objects.filter(name=name).exists():
            ProviderProfile.objects.create(name=name, source=ProviderProfile.Source.SEED, **data)
            created += 1
    return created
