"""Provider keys are encrypted at rest and appear nowhere else: not in logs, console output,
the Chronicle, API responses or admin pages. Virtual keys are stored only as hashes."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client

from bearpit.auth import api_token
from chronicle.models import Event, Message
from ledger import keystore
from ledger.gateway.server import GatewayServer
from ledger.models import Credential, VirtualKey
from ledger.services.credentials import (
    CredentialError,
    add_credential,
    credential_secret,
    remove_credential,
    rotate_credential,
)
from tests.conftest import REPO
from tests.fixtures.sqlitefile import read_from_another_process
from tests.ledger.conftest import UPSTREAM_SECRET, mint, settled
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

PIPED_SECRET = "sk-piped-0123456789-ZYXWVUTSRQPONMLK"
ROTATED_SECRET = "sk-rotated-9876543210-abcdefghijkl"


def test_keystore_file_is_private(tmp_path: Path, settings: Any) -> None:
    # Without BEARPIT_KEYSTORE_KEY the key is a file made once in BEARPIT_HOME (a home of
    # this test's own, so no other test's leftovers count).
    settings.BEARPIT_KEYSTORE_KEY = None
    settings.BEARPIT_HOME = tmp_path
    keystore.reset_cache()
    token = keystore.encrypt("x")
    path = tmp_path / "keystore.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    keystore.reset_cache()
    assert keystore.decrypt(token) == "x"  # the same file, read back


def test_credential_services_and_errors() -> None:
    info = add_credential(handle="h-1", provider="openai", api_key="sk-abcdefghijklmnop1234")
    assert info.masked == "…1234"
    with pytest.raises(CredentialError, match="already exists"):
        add_credential(handle="h-1", provider="openai", api_key="sk-x")
    with pytest.raises(CredentialError, match="handle 'bad handle'"):
        add_credential(handle="bad handle", provider="openai", api_key="k")
    rotate_credential(handle="h-1", api_key="sk-new-key-000000009999")
    assert credential_secret("h-1") == ("sk-new-key-000000009999", "")
    assert Credential.objects.get(handle="h-1").rotated_at is not None
    remove_credential(handle="h-1")
    with pytest.raises(CredentialError, match="no such credential"):
        remove_credential(handle="h-1")
    assert add_credential(handle="ollama", provider="local", api_key=None).masked == "(no key)"


def test_a_raw_key_is_nowhere_but_the_provider(
    gateway: GatewayServer,
    upstream: FakeUpstream,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    own_keystore: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    # Added through the command with the key piped in, as the docs recommend.
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bearpit.settings",
        "BEARPIT_DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
        "BEARPIT_KEYSTORE_KEY": own_keystore,
    }
    env.pop("BEARPIT_API_KEY", None)
    added = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "pit_keys",
            "add",
            "piped-main",
            "--provider",
            "openai",
            "--api-base",
            upstream.base,
        ],
        input=PIPED_SECRET,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    outputs = [added.stdout, added.stderr]
    assert "added piped-main (openai) key …NMLK" in added.stdout
    out = io.StringIO()
    call_command("pit_keys", "rotate", "piped-main", "--api-key", ROTATED_SECRET, stdout=out)
    call_command("pit_keys", "list", stdout=out)
    outputs.append(out.getvalue())
    assert "piped-main\topenai\t…ijkl" in out.getvalue()

    # Calls that succeed, fail, stream; a provider that quotes the key back.
    secrets = []
    for model in ("ok", "leaky", "broken"):
        secret = mint("r-custody", f"a-{model}", "1", provider="fake", model=model)
        secrets.append(secret)
        for stream in (False, True):
            resp = httpx.post(
                f"{gateway.url}/chat/completions",
                json={
                    "model": "m",
                    "messages": [{"role": "user", "content": "hi"}],
                    "stream": stream,
                },
                headers={"Authorization": f"Bearer {secret}"},
                timeout=20,
            )
            outputs.append(resp.text)
            outputs.append(str(resp.headers))
    assert upstream.auth_headers[0] == f"Bearer {UPSTREAM_SECRET}"  # the one place it goes
    settled("r-custody")

    # The operator API and the admin pages.
    client = Client()
    api = client.get("/api/settings/provider", HTTP_AUTHORIZATION=f"Bearer {api_token()}")
    assert api.status_code == 200
    outputs.append(api.content.decode())
    admin_user = User.objects.create_superuser("op", "op@example.com", "pw")
    client.force_login(admin_user)
    for url in (
        "/admin/ledger/credential/",
        f"/admin/ledger/credential/{Credential.objects.get(handle='fake-main').pk}/change/",
        "/admin/ledger/virtualkey/",
        "/admin/ledger/spend/",
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        outputs.append(page.content.decode())
    assert "…CDEF" in outputs[-3]  # the masked tail is how the operator recognises a key

    captured = capfd.readouterr()
    outputs += [captured.out, captured.err, caplog.text]
    outputs += [str(e.payload) for e in Event.objects.all()]
    outputs += [m.body + str(m.attachments) for m in Message.objects.all()]
    with connection.cursor() as cur:
        for table in ("ledger_credential", "ledger_virtualkey", "ledger_spend", "chronicle_event"):
            cur.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed table names
            outputs.append(repr(cur.fetchall()))
    db_file = Path(connection.settings_dict["NAME"])
    raw_db = read_from_another_process(db_file) + read_from_another_process(f"{db_file}-wal")

    assert Event.objects.filter(realm_id="r-custody", kind="spend").exists()
    for raw in (UPSTREAM_SECRET, PIPED_SECRET, ROTATED_SECRET, *secrets):
        for text in outputs:
            assert raw not in text
        assert raw.encode() not in raw_db
    # Virtual keys are kept as their sha256 only.
    assert VirtualKey.objects.filter(key_prefix__startswith="bpk-").count() == 3
    assert credential_secret("piped-main")[0] == ROTATED_SECRET


def test_admin_adds_and_rotates_keys_without_showing_them() -> None:
    client = Client()
    client.force_login(User.objects.create_superuser("op2", "op2@example.com", "pw"))
    added = client.post(
        "/admin/ledger/credential/add/",
        {"handle": "adm-main", "provider": "openai", "api_base": "", "api_key": PIPED_SECRET},
    )
    assert added.status_code == 302, added.content[:500]
    cred = Credential.objects.get(handle="adm-main")
    assert PIPED_SECRET.encode() not in bytes(cred.encrypted_key)
    assert credential_secret("adm-main")[0] == PIPED_SECRET
    change = f"/admin/ledger/credential/{cred.pk}/change/"
    page = client.get(change).content.decode()
    assert PIPED_SECRET not in page and "…NMLK" in page
    # Saving without a key keeps it; with one, rotates it.
    client.post(change, {"provider": "openai", "api_base": "http://x/v1", "api_key": ""})
    assert credential_secret("adm-main") == (PIPED_SECRET, "http://x/v1")
    client.post(
        change, {"provider": "openai", "api_base": "http://x/v1", "api_key": ROTATED_SECRET}
    )
    assert credential_secret("adm-main")[0] == ROTATED_SECRET
    client.post(f"/admin/ledger/credential/{cred.pk}/delete/", {"post": "yes"})
    assert not Credential.objects.filter(handle="adm-main").exists()


@pytest.mark.parametrize("stream", [False, True])
def test_a_provider_that_echoes_the_key_in_a_reply_is_scrubbed(
    gateway: GatewayServer, upstream: FakeUpstream, stream: bool
) -> None:
    secret = mint("r-echo", f"a-{stream}", "1", provider="fake", model="echo")
    resp = httpx.post(
        f"{gateway.url}/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )
    assert resp.status_code == 200, resp.text
    assert upstream.auth_headers[-1] == f"Bearer {UPSTREAM_SECRET}"
    assert UPSTREAM_SECRET not in resp.text
    assert "***" in resp.text
    settled("r-echo")


def test_a_key_spread_over_stream_chunks_is_scrubbed(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-echo-split", "a", "1", provider="fake", model="echo-split")
    resp = httpx.post(
        f"{gateway.url}/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )
    assert resp.status_code == 200, resp.text
    text = "".join(
        choice["delta"].get("content") or ""
        for line in resp.text.splitlines()
        if line.startswith("data: {")
        for choice in json.loads(line[6:]).get("choices", [])
    )
    # The agent reassembles the stream: the key must not be in what it puts together, while
    # the rest of the reply arrives whole and in order.
    assert UPSTREAM_SECRET not in text, resp.text[:3000]
    assert text == "you sent Bearer *** to me"
    assert resp.text.rstrip().endswith("data: [DONE]")
    settled("r-echo-split")


def test_ledger_tests_do_not_depend_on_the_shared_home() -> None:
    # Another test's fixture may leave something in the shared test home that is no Fernet
    # key at all; the ledger tests bring their own keystore.
    shared = Path(os.environ["BEARPIT_HOME"]) / "keystore.key"
    saved = shared.read_bytes() if shared.exists() else None
    shared.write_text("keystore-secret-material")
    keystore.reset_cache()
    try:
        add_credential(handle="iso-main", provider="openai", api_key=PIPED_SECRET)
        assert credential_secret("iso-main")[0] == PIPED_SECRET
    finally:
        if saved is None:
            shared.unlink()
        else:
            shared.write_bytes(saved)
        keystore.reset_cache()
