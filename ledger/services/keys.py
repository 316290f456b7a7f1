"""Virtual keys: one capped key per realm agent, minted at provisioning, revoked at teardown."""

from __future__ import annotations

import hashlib
import secrets
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from ledger.models import Credential, VirtualKey
from ledger.pricing import cap_nusd, table_prices
from ledger.scripted import parse_script
from ledger.services.profiles import all_profiles

KEY_PREFIX = "bpk-"
REVOKED_CONCLUDED = "realm concluded"
REVOKED_REPLACED = "replaced"
ON_EXHAUSTED = ("starve", "starve_then_kill", "kill")


class MintError(ValueError):
    """A key cannot be minted as asked; nothing was changed."""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _dec(value: Decimal | float | str | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


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
    """
    if on_exhausted not in ON_EXHAUSTED:
        raise MintError(f"on_exhausted: must be one of {', '.join(ON_EXHAUSTED)}")
    if cap_usd is not None and cap_usd < 0:
        raise MintError("cap_usd: must not be negative")
    profile = all_profiles().get(provider)
    tier = (
        next((t for t in profile.categories.values() if t.model == model), None)
        if profile
        else None
    )
    in_price = _dec(input_cost_per_token)
    out_price = _dec(output_cost_per_token)
    if in_price is None and out_price is None and tier is not None:
        in_price, out_price = tier.input_cost_per_token, tier.output_cost_per_token
    transport = profile.transport if profile else "litellm"
    litellm_provider = (profile.litellm_provider if profile else "") or provider
    if in_price is None and out_price is None:
        found = table_prices(model, litellm_provider)
        if found is not None:
            in_price, out_price = found
    if cap_usd is not None and in_price is None and out_price is None:
        raise MintError(
            f"{realm_id}/{agent_id}: a capped key needs token prices; none known for "
            f"{provider}/{model}"
        )
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
    return key, secret


@transaction.atomic
def revoke_realm_keys(realm_id: str, *, reason: str = REVOKED_CONCLUDED) -> int:
    """Revoke every live key of the realm; calls in flight still settle."""
    return VirtualKey.objects.filter(realm_id=realm_id, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason=reason
    )
