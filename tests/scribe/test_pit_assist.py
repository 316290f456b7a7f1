"""``pit assist``: the conversation in a terminal, with the diff and a y/N approval."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ledger.services.keys import mint_virtual_key
from realms.library import services as library
from realms.models import Scenario
from scribe.models import ScribeSession
from tests.scribe.conftest import call, debate_files, step, writes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _assist(stdin: str, *args: str) -> str:
    out = io.StringIO()
    call_command("pit_assist", *args, stdin=io.StringIO(stdin), stdout=out, stderr=out)
    return out.getvalue()


def _proposing_script(script) -> None:
    script(
        [
            step(call("ask_user", question="Who judges?")),
            step(*writes(debate_files()), call("propose_draft", summary="the debate")),
            step(text="Please review."),
        ]
    )


def test_assist_shows_the_diff_and_saves_on_yes(scribe_env, script) -> None:
    _proposing_script(script)
    output = _assist("A debate.\nA judge.\ny\n", "--name", "debate")
    assert "scribe asks> Who judges?" in output
    assert "  · write_draft_file agents/judge/agent.json" in output
    assert "scribe proposes draft v6: the debate" in output
    assert "+++ draft/agents/alice/persona.md" in output
    assert "+You argue for the motion." in output
    assert "approve and save this draft? [y/N]" in output
    assert "saved debate to the library" in output
    assert "scribe: spent " in output
    assert library.resolve("debate").source == Scenario.Source.USER


def test_assist_saves_nothing_without_yes(scribe_env, script) -> None:
    _proposing_script(script)
    output = _assist("A debate.\nA judge.\n\n", "--name", "debate")
    assert "not saved" in output
    assert not Scenario.objects.filter(name="debate").exists()
    assert ScribeSession.objects.get().state == "proposed"


def test_assist_calls_a_direct_endpoint_without_keeping_its_key(scribe_env, script) -> None:
    """``--api-base``: any OpenAI-compatible endpoint (here the gateway, with a key of a
    realm's own), called directly; Scribe stores neither the key nor a key of its own."""
    _key, secret = mint_virtual_key(
        realm_id="direct-endpoint",
        agent_id="outside",
        provider="offline",
        model="scripted-small",
        cap_usd=None,
        on_exhausted="starve",
        script="steps:\n  - text: direct hello\n",
    )
    output = _assist(
        "hi\n\n", "--api-base", scribe_env.url, "--api-key", secret, "--model", "scripted-small"
    )
    assert "scribe> direct hello" in output
    session = ScribeSession.objects.get()
    assert (session.provider, session.key_id, bytes(session.key_secret)) == ("direct", None, b"")
    assert secret not in output


def test_assist_refuses_what_it_cannot_do(scribe_env, script) -> None:
    script([step(text="hi")])
    with pytest.raises(CommandError, match="no scenario named 'nope'"):
        _assist("", "--scenario", "nope")
    with pytest.raises(CommandError, match="--model"):
        _assist("", "--api-base", "http://127.0.0.1:9/v1")
    assert ScribeSession.objects.count() == 0


def test_assist_starts_a_gateway_of_its_own_when_none_answers(scribe_env, script, settings):
    settings.BEARPIT_SCRIBE_GATEWAY = None
    script([step(text="through my own gateway")])
    output = _assist("hi\n\n")
    assert "scribe> through my own gateway" in output
    assert "in 1 calls" in output
    # Stopped with the command: nothing is left listening on the socket.
    from ledger.gateway.server import default_socket_path

    assert not default_socket_path().exists()
