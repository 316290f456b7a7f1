"""``manage.py pit_keys add|rotate|remove|list``: provider keys in the keystore.

The key read from a pipe and used through the gateway is in services/test_key_custody.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_keys_command_refuses_without_a_key_and_reports_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    monkeypatch.delenv("BEARPIT_API_KEY", raising=False)
    with pytest.raises(CommandError, match="no API key given"):
        call_command("pit_keys", "add", "k1", "--provider", "openai")
    monkeypatch.setenv("BEARPIT_API_KEY", "sk-from-env-0000000000001111")
    out = io.StringIO()
    call_command("pit_keys", "add", "k1", "--provider", "openai", stdout=out)
    assert "key …1111" in out.getvalue()
    call_command("pit_keys", "add", "ollama", "--provider", "local", "--keyless", stdout=out)
    with pytest.raises(CommandError, match="already exists"):
        call_command("pit_keys", "add", "k1", "--provider", "openai")
    with pytest.raises(CommandError, match="no such credential"):
        call_command("pit_keys", "remove", "nope")
    listing = io.StringIO()
    call_command("pit_keys", "list", stdout=listing)
    assert "k1\topenai\t…1111" in listing.getvalue()
    assert "ollama\tlocal\t(no key)" in listing.getvalue()
    assert "sk-from-env" not in out.getvalue() + listing.getvalue()
