"""Virtual keys: one capped key per realm agent, minted at provisioning, revoked at teardown."""

from __future__ import annotations

import hashlib
import secrets
import time
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from chronicle.kinds import Kind
from chronicle.services import record_event
from ledger.models import Credential, VirtualKey
from ledger.pricing import cap_nusd, table_prices
from ledger.scripted import parse_script
from ledger.services.credentials import serves
from ledger.services.profiles import all_profiles

KEY_PREFIX = "bpk-"
REVOKED_CONCLUDED = "realm concluded"
REVOKED_REPLACED = "replaced"
ON_EXHAUSTED = ("starve", "starve_then_kill", "kill")
MAX_PRICE_USD = Decimal(1)  # per token; the package format's own bound
MAX_CONTEXT_LENGTH = 100_000_000


class MintError(ValueError):
    """A key cannot be minted as asked; nothing was changed."""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _dec(value: Decimal | float | str | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _prices(
    given_in: Decimal | None,
    given_out: Decimal | None,
    known: tuple[Decimal | None, Decimal | None] | None,
    *,
    flat_rate: bool,
) -> tuple[Decimal | None, Decimal | None]:
    """The key's prices: those given, else the known ones (the profile's tier for this model,
    else LiteLLM's table).

    Given prices only ever raise a known price, except on a flat-rate provider: a scenario
    cannot make a paid model cheaper than it is, and so loosen its own cap.
    """
    for name, price in (("input_cost_per_token", given_in), ("output_cost_per_token", given_out)):
        if price is not None and price < 0:
            raise MintError(f"{name}: must not be negative")
        if price is not None and price > MAX_PRICE_USD:
            raise MintError(f"{name}: at most {MAX_PRICE_USD} USD per token")
    if known is None:
        return given_in, given_out
    if given_in is None and given_out is None:
        return known
    if flat_rate:
        return given_in, given_out
    return _higher(given_in, known[0]), _higher(given_out, known[1])


def _higher(given: Decimal | None, known: Decimal | None) -> Decimal | None:
    if given is None or known is None:
        return known if given is None else given
    return max(given, known)


def _bill_per_token(
    provider: str, in_price: Decimal | None, out_price: Decimal | None, *, capped: bool
) -> None:
    """A provider that bills per token gets prices above zero (a zero price is no cap)."""
    for name, price in (("input_cost_per_token", in_price), ("output_cost_per_token", out_price)):
        if price == 0 or (capped and price is None):
            raise MintError(
                f"{name}: a price of 0 (or none) is only for flat-rate providers; "
                f"{provider!r} bills per token, so a zero price would disable the cap"
            )


@transaction.atomic
def mint_virtual_key(
    *,
    realm_id: str,
    agent_id: str,
    provider: str,
    model: str,
    cap_usd: Decimal | None,
    on_exhausted: str,
    credential_handle: str | None = None,
    script: str | None = None,
    input_cost_per_token: Decimal | float | None = None,
    output_cost_per_token: Decimal | float | None = None,
    effort: str | None = None,
    context_length: int | None = None,
) -> tuple[VirtualKey, str]:
    """Mint the agent's key; the secret is returned here once and stored only as a hash.

    Whatever is not given comes from the provider's profile (transport, base URL, key
    handle, and the prices of the tier with this model), then from LiteLLM's price table.
    A key minted again for the same agent replaces the old one and inherits its spend
    against the cap.

    Whoever asks (a package's explicit model included), a stored provider key is only
    used with the provider it was stored for, and prices of 0 only on flat-rate providers.
    """
    if on_exhausted not in ON_EXHAUSTED:
        raise MintError(f"on_exhausted: must be one of {', '.join(ON_EXHAUSTED)}")
    if cap_usd is not None and cap_usd < 0:
        raise MintError("cap_usd: must not be negative")
    if context_length is not None and not 1 <= context_length <= MAX_CONTEXT_LENGTH:
        raise MintError(f"context_length: must be from 1 to {MAX_CONTEXT_LENGTH}")
    profile = all_profiles().get(provider)
    tier = (
        next((t for t in profile.categories.values() if t.model == model), None)
        if profile
        else None
    )
    transport = profile.transport if profile else "litellm"
    litellm_provider = (profile.litellm_provider if profile else "") or provider
    flat_rate = bool(profile and profile.flat_rate)
    per_token = not flat_rate and transport != "scripted"
    given_in, given_out = _dec(input_cost_per_token), _dec(output_cost_per_token)
    if per_token:
        _bill_per_token(provider, given_in, given_out, capped=False)
    in_price, out_price = _prices(
        given_in,
        given_out,
        (tier.input_cost_per_token, tier.output_cost_per_token)
        if tier is not None
        else table_prices(model, litellm_provider),
        flat_rate=flat_rate,
    )
    if cap_usd is not None and in_price is None and out_price is None:
        raise MintError(
            f"{realm_id}/{agent_id}: a capped key needs token prices; none known for "
            f"{provider}/{model}"
        )
    if per_token:
        _bill_per_token(provider, in_price, out_price, capped=cap_usd is not None)
    handle = (
        credential_handle
        if credential_handle is not None
        else (profile.api_key_ref if profile else "")
    )
    api_base = profile.api_base if profile else ""
    if handle and transport != "scripted":
        cred = Credential.objects.filter(handle=handle).first()
        if cred is None:
            raise MintError(f"key handle {handle!r}: not in the keystore (pit_keys add {handle} …)")
        if not serves(
            cred.provider,
            cred.api_base,
            provider=provider,
            litellm_provider=litellm_provider,
            base=api_base,
        ):
            raise MintError(
                f"key handle {handle!r}: stored for provider {cred.provider!r}, not "
                f"{provider!r}; a provider key is only sent to its own provider"
            )
        api_base = cred.api_base or api_base
    script_text = script or ""
    if script_text:
        parse_script(script_text)

    previous = VirtualKey.objects.select_for_update().filter(realm_id=realm_id, agent_id=agent_id)
    base = previous.aggregate(s=Sum("spent_nusd"))["s"] or 0
    previous.filter(revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason=REVOKED_REPLACED
    )
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = VirtualKey.objects.create(
        key_hash=hash_secret(secret),
        key_prefix=secret[:10],
        realm_id=realm_id,
        agent_id=agent_id,
        provider=provider,
        model=model,
        transport=transport,
        litellm_provider=litellm_provider,
        api_base=api_base,
        credential_handle=handle or "",
        effort=effort or (tier.effort if tier and tier.effort else "") or "",
        context_length=context_length or (tier.context_length if tier else None),
        input_price=in_price,
        output_price=out_price,
        cap_nusd=None if cap_usd is None else cap_nusd(cap_usd),
        base_nusd=base,
        on_exhausted=on_exhausted,
        script=script_text,
    )
    # The archive and the report read what a key cost from the Chronicle, which outlives
    # the ledger's rows.
    record_event(
        realm_id,
        Kind.KEY,
        {
            "agent": agent_id,
            "provider": provider,
            "model": model,
            "transport": transport,
            "input_cost_per_token": None if in_price is None else float(in_price),
            "output_cost_per_token": None if out_price is None else float(out_price),
        },
    )
    return key, secret


def wait_settled(realm_id: str, timeout_s: float, *, poll_s: float = 0.02) -> int:
    """Wait until no call of the realm holds a reservation; how many keys still do.

    A call in flight when its agent stopped is still answered, metered and recorded by
    the gateway; a realm's books are complete only once it has settled."""
    deadline = time.monotonic() + timeout_s
    while True:
        open_keys = VirtualKey.objects.filter(realm_id=realm_id, reserved_nusd__gt=0).count()
        if open_keys == 0 or time.monotonic() >= deadline:
            return open_keys
        time.sleep(poll_s)


@transaction.atomic
def revoke_realm_keys(realm_id: str, *, reason: str = REVOKED_CONCLUDED) -> int:
    """Revoke every live key of the realm; calls in flight still settle."""
    return VirtualKey.objects.filter(realm_id=realm_id, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason=reason
    )
