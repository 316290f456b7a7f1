"""Which provider profile a launch resolves against.

An explicit choice wins. Otherwise the configured provider (``BEARPIT_PROVIDER`` or
the stored setting) is used when it can actually be called: it needs no key, or its
key handle is in the keystore. A machine where nobody configured a provider runs
on the keyless ``offline`` profile, so a fresh clone works. A configured provider
that cannot be used is replaced only with the caller's consent.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from ledger.models import Credential, LedgerSetting
from ledger.services.profiles import (
    ACTIVE_PROVIDER_KEY,
    Profile,
    ProfileError,
    active_provider_name,
    all_profiles,
)
from realms.services.errors import LaunchError

OFFLINE = "offline"


@dataclass(frozen=True)
class ProviderChoice:
    name: str
    fallback: bool = False
    note: str = ""


def usable(profile: Profile) -> bool:
    if profile.transport == "scripted" or not profile.api_key_ref:
        return True
    return Credential.objects.filter(handle=profile.api_key_ref).exists()


def _configured() -> bool:
    return (
        bool(settings.BEARPIT_PROVIDER)
        or LedgerSetting.objects.filter(key=ACTIVE_PROVIDER_KEY).exists()
    )


def choose_provider(explicit: str | None, *, allow_fallback: bool = False) -> ProviderChoice:
    profiles = all_profiles()
    if explicit:
        if explicit not in profiles:
            raise LaunchError(
                [f"provider {explicit!r}: no such profile (known: {', '.join(sorted(profiles))})"]
            )
        return ProviderChoice(explicit)
    name = active_provider_name()
    profile = profiles.get(name)
    if profile is not None and usable(profile):
        return ProviderChoice(name)
    why = (
        f"provider {name!r} is not a known profile"
        if profile is None
        else f"provider {name!r} needs the key handle {profile.api_key_ref!r}, "
        "which is not in the keystore"
    )
    if not _configured():
        # A fresh installation: say what runs instead and how to get the real thing.
        hint = f"`pit keys add {profile.api_key_ref}` adds it" if profile is not None else ""
        return ProviderChoice(
            OFFLINE,
            note=f"none configured, so offline (the keyless scripted provider); {why}"
            + (f": {hint}" if hint else ""),
        )
    if allow_fallback and OFFLINE in profiles:
        return ProviderChoice(OFFLINE, fallback=True, note=f"{why}; substituted offline")
    raise LaunchError(
        [
            f"{why}. Add the key (pit keys add), choose another provider with "
            "--provider, or consent to the offline substitute."
        ]
    )


__all__ = ["OFFLINE", "ProfileError", "ProviderChoice", "choose_provider", "usable"]
