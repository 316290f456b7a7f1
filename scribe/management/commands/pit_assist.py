"""``pit assist``: talk with Scribe in the terminal; approve its draft (y/N) after the diff."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scribe.models import ScribeSession
from scribe.services import conversation, drafts, sessions
from scribe.services.errors import ScribeError
from scribe.services.model import Endpoint

PROMPT = "you> "
MARKS = {"text": "scribe> ", "tool": "  · ", "question": "scribe asks> ", "error": "  ! "}


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


@contextlib.contextmanager
def _gateway() -> Iterator[None]:
    """The gateway pit_serve runs, or one of this command's own while it runs."""
    if settings.BEARPIT_SCRIBE_GATEWAY:
        yield
        return
    from ledger.gateway.server import GatewayServer, default_socket_path

    path = default_socket_path()
    if _answers(path):
        yield
        return
    server = GatewayServer(uds_path=path).start()
    try:
        yield
    finally:
        server.stop()


class Command(BaseCommand):
    help = "Draft or edit a scenario package in a conversation with Scribe."
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", help="edit this library scenario (else create one)")
        parser.add_argument("--name", help="the name a new scenario is saved as")
        parser.add_argument("--model", help="the model (default: the tier's model)")
        parser.add_argument("--provider", help="provider profile (default: the active one)")
        parser.add_argument("--key", metavar="HANDLE", help="a stored provider key to call with")
        parser.add_argument("--cap", type=Decimal, help="this session's cap in USD")
        parser.add_argument(
            "--api-base",
            help="call this OpenAI-compatible endpoint directly instead of the gateway "
            "(unmetered; needs --model)",
        )
        parser.add_argument(
            "--api-key",
            help="the direct endpoint's key (else BEARPIT_SCRIBE_API_KEY; never stored)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stdin: TextIO = options.get("stdin") or sys.stdin
        mode = "edit" if options["scenario"] else "create"
        direct: Endpoint | None = None
        if options["api_base"]:
            if not options["model"]:
                raise CommandError("--api-base: name the endpoint's model with --model")
            key = options["api_key"] or os.environ.get("BEARPIT_SCRIBE_API_KEY", "")
            direct = Endpoint(
                base_url=options["api_base"].rstrip("/"), api_key=key, model=options["model"]
            )
        try:
            session = sessions.create_session(
                mode,
                options["scenario"] or options["name"],
                provider=options["provider"],
                model=options["model"],
                credential_handle=options["key"],
                cap_usd=options["cap"],
                direct_model=options["model"] if direct else None,
            )
        except ScribeError as exc:
            raise CommandError(str(exc)) from exc
        where = f"editing {session.scenario}" if mode == "edit" else "a new scenario"
        self.stdout.write(
            f"scribe: session {session.session_id}, {where}, model {session.model} "
            f"({session.provider}); an empty line or EOF ends"
        )
        with contextlib.nullcontext() if direct else _gateway():
            self._converse(session, direct, stdin)

    def _converse(self, session: ScribeSession, direct: Endpoint | None, stdin: TextIO) -> None:
        while True:
            self.stdout.write(PROMPT, ending="")
            self.stdout.flush()
            text = stdin.readline()
            if not text.strip():
                self.stdout.write("")
                break
            try:
                session = conversation.start_message(
                    session.session_id, text, direct=direct is not None
                )
            except ScribeError as exc:
                self.stderr.write(str(exc))
                break
            for line in conversation.reply(session, direct):
                self._show(line)
            session.refresh_from_db()
            if session.state == ScribeSession.State.CAPPED:
                break
            if session.state == ScribeSession.State.PROPOSED and self._approve(session, stdin):
                break
        spend = sessions.spend_of(session)
        if spend.get("metered"):
            self.stdout.write(
                f"scribe: spent {spend['spent_usd']:.6f} of {spend['cap_usd']} USD "
                f"in {spend['calls']} calls"
            )

    def _show(self, line: dict[str, str]) -> None:
        kind = line["kind"]
        if kind == "done":
            return
        if kind == "draft":
            self.stdout.write(f"scribe proposes draft {line['name']}: {line['text']}")
            return
        self.stdout.write(f"{MARKS.get(kind, '  ')}{line['text']}")

    def _approve(self, session: ScribeSession, stdin: TextIO) -> bool:
        files = drafts.current_files(session)
        for entry in drafts.diff(drafts.saved_files(session), files):
            if entry["status"] != "same":
                self.stdout.write(f"--- {entry['path']} ({entry['status']})")
                self.stdout.write(entry["diff"].rstrip("\n"))
        self.stdout.write("approve and save this draft? [y/N] ", ending="")
        self.stdout.flush()
        if stdin.readline().strip().lower() not in ("y", "yes"):
            self.stdout.write("not saved; say what to change")
            return False
        try:
            scenario = sessions.approve(session.session_id)
        except ScribeError as exc:
            self.stderr.write(str(exc))
            return False
        self.stdout.write(self.style.SUCCESS(f"saved {scenario.name} to the library"))
        return True
