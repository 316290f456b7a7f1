"""``manage.py pit_providers list|use|seed``: provider profiles and the active one."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from ledger.models import ProviderProfile
from ledger.services.profiles import active_provider_name

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("pit_providers", *args, stdout=out)
    return out.getvalue()


def test_list_marks_the_active_profile_and_use_switches_it(profiles: None) -> None:
    assert run("use", "offline") == "active provider: offline\n"
    listing = run("list").splitlines()
    offline = next(line for line in listing if line.startswith("* "))
    assert offline.startswith("* offline\tscripted\t") and "medium=scripted-medium" in offline
    assert any(line.startswith("  azure\tlitellm\t") for line in listing), listing
    assert run("use", "azure") == "active provider: azure\n"
    assert active_provider_name() == "azure"
    marked = [line.split("\t")[0] for line in run("list").splitlines() if line.startswith("* ")]
    assert marked == ["* azure"]
    with pytest.raises(CommandError, match="nonesuch"):
        run("use", "nonesuch")
    assert active_provider_name() == "azure"


def test_seed_restores_the_missing_profiles(profiles: None) -> None:
    seeded = ProviderProfile.objects.count()
    ProviderProfile.objects.filter(name="azure").delete()
    assert run("seed") == "seeded 1 profile(s)\n"
    assert ProviderProfile.objects.count() == seeded
    assert run("seed") == "seeded 0 profile(s)\n"
