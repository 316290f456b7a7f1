"""``pit keys add HANDLE`` without ``--provider``: the provider is the profile that stores
its key under that handle, as the reference lets users type it."""

from __future__ import annotations

import pytest

from tests.realms.management.ranrealm import Home

pytestmark = [pytest.mark.timeout(120)]


def test_the_provider_comes_from_the_profile_that_names_the_handle(fresh_home: Home) -> None:
    added = fresh_home.pit("keys", "add", "openai-main", stdin="sk-test-abcdefgh1234\n")
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines() == ["added openai-main (openai) key …1234"]
    explicit = fresh_home.manage(
        "pit_keys", "add", "spare", "--provider", "anthropic", stdin="sk-ant-abcdefgh5678\n"
    )
    assert explicit.stdout.splitlines() == ["added spare (anthropic) key …5678"], explicit.stderr
    listed = fresh_home.manage("pit_keys", "list")
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert rows == [["openai-main", "openai", "…1234"], ["spare", "anthropic", "…5678"]]


def test_a_handle_no_profile_names_needs_the_provider(fresh_home: Home) -> None:
    done = fresh_home.manage("pit_keys", "add", "mine", stdin="sk-test-abcdefgh0000\n")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "CommandError: --provider: not given, and no provider profile uses the handle "
        "'mine'; pass it"
    )
    listed = fresh_home.manage("pit_keys", "list")
    assert "mine" not in listed.stdout
