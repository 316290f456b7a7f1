"""Tokens and sealing: what verifies, what is refused, and the secret's rules."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from django.core.exceptions import ImproperlyConfigured

from realms.realmtools import sealing
from realms.realmtools.identity import (
    TokenError,
    mint_token,
    realmtools_secret,
    verify_token,
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_minted_token_verifies_to_its_identity():
    token = mint_token("duel-1", "vela", "player", ["orin", "vela"], ["web_fetch", "a_b"])
    identity = verify_token(token)
    assert identity.realm_id == "duel-1"
    assert identity.agent_id == "vela"
    assert identity.role == "player"
    assert identity.roster == ("orin", "vela")
    assert identity.grants == frozenset({"web_fetch", "a_b"})
    assert "=" not in token
    body = base64.urlsafe_b64decode(token.split(".")[0] + "==").decode()
    assert body == "duel-1:vela:player:orin,vela:a_b,web_fetch"  # grants sorted


def test_a_legacy_four_field_token_verifies_grantless():
    # Realms provisioned before grants existed hold tokens of four fields.
    raw = b"duel-1:themis:referee:orin,vela"
    sig = _b64(hmac.new(realmtools_secret(), raw, hashlib.sha256).digest())
    identity = verify_token(f"{_b64(raw)}.{sig}")
    assert identity.is_referee
    assert identity.grants == frozenset()


def test_tampered_and_forged_tokens_are_refused():
    token = mint_token("duel-1", "vela", "player", ["orin", "vela"])
    body, sig = token.split(".")
    promoted = _b64(b"duel-1:vela:referee:orin,vela:")
    with pytest.raises(TokenError):
        verify_token(f"{promoted}.{sig}")
    forged_sig = _b64(hmac.new(b"x" * 40, promoted.encode(), hashlib.sha256).digest())
    with pytest.raises(TokenError):
        verify_token(f"{promoted}.{forged_sig}")
    for bad in ("", "abc", f"{body}.", f".{sig}", f"{body}.{sig[:-2]}", "!!!.???"):
        with pytest.raises(TokenError):
            verify_token(bad)


def test_a_correctly_signed_payload_of_the_wrong_shape_is_refused():
    raw = b"duel-1:vela"
    sig = _b64(hmac.new(realmtools_secret(), raw, hashlib.sha256).digest())
    with pytest.raises(TokenError, match="fields"):
        verify_token(f"{_b64(raw)}.{sig}")


def test_fields_that_would_break_the_format_are_refused_at_minting():
    with pytest.raises(ValueError):
        mint_token("a:b", "vela", "player", [])
    with pytest.raises(ValueError):
        mint_token("duel", "vela", "player", ["x,y"])
    with pytest.raises(ValueError):
        mint_token("duel", "vela", "boss", [])  # type: ignore[arg-type]


def test_an_explicit_secret_must_be_long(settings):
    settings.BEARPIT_REALMTOOLS_SECRET = "short"
    with pytest.raises(ImproperlyConfigured):
        realmtools_secret()
    settings.BEARPIT_REALMTOOLS_SECRET = "s" * 32
    token = mint_token("duel-1", "vela", "player", [])
    assert verify_token(token).agent_id == "vela"
    settings.BEARPIT_REALMTOOLS_SECRET = "t" * 32
    with pytest.raises(TokenError):
        verify_token(token)  # a token signed under another secret


def test_sealing_round_trips_and_refuses_foreign_ciphertext(settings):
    sealed = sealing.seal("rock")
    assert "rock" not in sealed
    assert sealing.unseal(sealed) == "rock"
    settings.BEARPIT_REALMTOOLS_SECRET = "u" * 40
    with pytest.raises(sealing.SealError):
        sealing.unseal(sealed)
