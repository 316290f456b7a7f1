"""BYOK credentials: add, rotate, remove, and (inside the Ledger only) read back."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from ledger import keystore
from ledger.models import Credential

_HANDLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$")


class CredentialError(ValueError):
    """Bad input for a credential; nothing was changed."""


@dataclass(frozen=True)
class CredentialInfo:
    """What may be shown about a credential: never the key."""

    handle: str
    provider: str
    api_base: str
    masked: str


def _tail(secret: str) -> str:
    return secret[-4:] if len(secret) >= 12 else ""


def _check(handle: str, provider: str) -> None:
    if not _HANDLE.match(handle):
        raise CredentialError(
            f"handle {handle!r}: use 1-120 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    if not provider.strip():
        raise CredentialError("provider: must not be empty")


def _info(cred: Credential) -> CredentialInfo:
    return CredentialInfo(cred.handle, cred.provider, cred.api_base, cred.masked)


@transaction.atomic
def add_credential(
    *, handle: str, provider: str, api_key: str | None, api_base: str = ""
) -> CredentialInfo:
    """Store a new provider key under ``handle`` (keyless providers pass ``None``)."""
    _check(handle, provider)
    if Credential.objects.filter(handle=handle).exists():
        raise CredentialError(f"handle {handle!r}: already exists (rotate or remove it)")
    cred = Credential(handle=handle, provider=provider.strip(), api_base=api_base.strip())
    if api_key:
        cred.encrypted_key = keystore.encrypt(api_key)
        cred.key_tail = _tail(api_key)
    cred.save()
    return _info(cred)


@transaction.atomic
def rotate_credential(*, handle: str, api_key: str) -> CredentialInfo:
    """Replace the key of ``handle``; running realms use the new key from their next call."""
    cred = Credential.objects.select_for_update().filter(handle=handle).first()
    if cred is None:
        raise CredentialError(f"handle {handle!r}: no such credential")
    if not api_key:
        raise CredentialError("api key: must not be empty")
    cred.encrypted_key = keystore.encrypt(api_key)
    cred.key_tail = _tail(api_key)
    cred.rotated_at = timezone.now()
    cred.save(update_fields=["encrypted_key", "key_tail", "rotated_at"])
    return _info(cred)


@transaction.atomic
def remove_credential(*, handle: str) -> None:
    deleted, _ = Credential.objects.filter(handle=handle).delete()
    if not deleted:
        raise CredentialError(f"handle {handle!r}: no such credential")


def list_credentials() -> list[CredentialInfo]:
    return [_info(c) for c in Credential.objects.all()]


@dataclass(frozen=True)
class UpstreamCredential:
    provider: str
    api_base: str
    secret: str | None


def serves(
    cred_provider: str, cred_base: str, *, provider: str, litellm_provider: str, base: str
) -> bool:
    """Whether a key stored for ``cred_provider`` may go with calls to ``provider``.

    To its own provider, always. To a profile that only translates for that provider
    (its LiteLLM provider), only where the key would go anyway: the base URL stored with
    the key, or the provider's own endpoint when the profile names none. Never to another
    profile's base URL, which may be a server anyone (an agent with open egress) can reach.
    """
    if cred_provider == provider:
        return True
    return cred_provider == litellm_provider and (bool(cred_base) or not base)


def credential_for(handle: str) -> UpstreamCredential:
    """The decrypted key of ``handle`` with the provider it was stored for (gateway only)."""
    cred = Credential.objects.filter(handle=handle).first()
    if cred is None:
        raise CredentialError(f"handle {handle!r}: no such credential")
    key = keystore.decrypt(bytes(cred.encrypted_key)) if cred.encrypted_key else None
    return UpstreamCredential(provider=cred.provider, api_base=cred.api_base, secret=key)


def credential_secret(handle: str) -> tuple[str | None, str]:
    """The decrypted key and api_base of ``handle``; for the gateway's upstream calls only."""
    cred = credential_for(handle)
    return cred.secret, cred.api_base
