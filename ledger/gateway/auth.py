"""Who is calling: the virtual key behind a bearer token, cached briefly in memory.

The cache only saves a lookup; it never grants anything. Revocation and the realm's end
are re-checked by the reservation, which every call makes against the database.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

from ledger.models import VirtualKey
from ledger.services.credentials import CredentialError, credential_for, serves
from ledger.services.keys import REVOKED_CONCLUDED, hash_secret
from realms.models import Realm

CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class KeyInfo:
    id: int
    realm_id: str
    agent_id: str
    provider: str
    model: str
    transport: str
    litellm_provider: str
    api_base: str
    effort: str
    input_price: Decimal | None
    output_price: Decimal | None
    has_script: bool
    upstream_key: str | None
    revoked: str | None  # None = live; else "concluded" or "revoked"
    context_length: int | None = None
    credential_problem: str | None = None  # why the stored key may not be used
    record: bool = True  # the realm's calls are recorded (ledger.gateway.record)
    replay: Mapping[str, Any] | None = None  # the realm replays a recording (replay_backend)


def _load(key_hash: str) -> KeyInfo | None:
    key = VirtualKey.objects.filter(key_hash=key_hash).first()
    if key is None:
        return None
    revoked: str | None = None
    if key.revoked_at is not None:
        revoked = "concluded" if key.revoked_reason == REVOKED_CONCLUDED else "revoked"
    realm = (
        Realm.objects.filter(realm_id=key.realm_id)
        .values("state", "run_config__record_calls", "run_config__replay")
        .first()
    )
    if revoked is None and realm is not None and realm["state"] in Realm.TERMINAL_STATES:
        revoked = "concluded"
    record = settings.BEARPIT_RECORD_CALLS
    replay: Mapping[str, Any] | None = None
    if realm is not None:
        if isinstance(realm["run_config__record_calls"], bool):
            record = realm["run_config__record_calls"]
        if isinstance(realm["run_config__replay"], dict):
            replay = realm["run_config__replay"]
    upstream_key: str | None = None
    api_base = key.api_base
    problem: str | None = None
    if key.credential_handle and key.transport != "scripted":
        try:
            cred = credential_for(key.credential_handle)
        except CredentialError:
            cred = None
        fits = cred is not None and serves(
            cred.provider,
            cred.api_base,
            provider=key.provider,
            litellm_provider=key.litellm_provider,
            base=key.api_base,
        )
        if cred is not None and fits:
            upstream_key, api_base = cred.secret, cred.api_base or api_base
        elif cred is not None:
            # Checked at minting too; this holds if the credential was changed since.
            problem = (
                f"the key handle {key.credential_handle!r} is stored for provider "
                f"{cred.provider!r}, not {key.provider!r}; the platform will not send it there"
            )
    return KeyInfo(
        id=key.pk,
        realm_id=key.realm_id,
        agent_id=key.agent_id,
        provider=key.provider,
        model=key.model,
        transport=key.transport,
        litellm_provider=key.litellm_provider,
        api_base=api_base,
        effort=key.effort,
        input_price=key.input_price,
        output_price=key.output_price,
        has_script=bool(key.script),
        upstream_key=upstream_key,
        revoked=revoked,
        context_length=key.context_length,
        credential_problem=problem,
        record=record,
        replay=replay,
    )


class KeyCache:
    def __init__(self, ttl: float = CACHE_SECONDS) -> None:
        self._ttl = ttl
        self._entries: dict[str, tuple[float, KeyInfo | None]] = {}

    def cached(self, secret: str) -> tuple[str, KeyInfo | None, bool]:
        """(hash, info, hit) from memory only."""
        key_hash = hash_secret(secret)
        entry = self._entries.get(key_hash)
        if entry is not None and entry[0] > time.monotonic():
            return key_hash, entry[1], True
        return key_hash, None, False

    def load(self, key_hash: str) -> KeyInfo | None:
        """Look the key up in the database (call from a worker thread) and remember it."""
        info = _load(key_hash)
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[key_hash] = (time.monotonic() + self._ttl, info)
        return info

    def forget(self, key_hash: str) -> None:
        self._entries.pop(key_hash, None)
