"""``manage.py pit_keys add|list|remove|rotate``: provider keys in the encrypted keystore."""

from __future__ import annotations

import getpass
import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.services.credentials import (
    CredentialError,
    add_credential,
    list_credentials,
    remove_credential,
    rotate_credential,
)
from ledger.services.profiles import providers_using_handle


def _read_key(given: str | None, *, required: bool) -> str | None:
    """The key from --api-key, else piped stdin, else BEARPIT_API_KEY, else a hidden prompt."""
    if given:
        return given
    if not sys.stdin.isatty():
        piped = sys.stdin.read().strip()
        if piped:
            return piped
    from_env = os.environ.get("BEARPIT_API_KEY", "").strip()
    if from_env:
        return from_env
    if sys.stdin.isatty():
        prompted = getpass.getpass("API key (input hidden): ")
        if prompted.strip():
            return prompted.strip()
    if required:
        raise CommandError(
            "no API key given: pipe it in, set BEARPIT_API_KEY, answer the prompt, or pass "
            "--keyless for a provider that needs none"
        )
    return None


def _provider_of(handle: str) -> str:
    """The one provider profile that stores its key under ``handle``."""
    names = providers_using_handle(handle)
    if len(names) == 1:
        return names[0]
    which = f"profiles {', '.join(names)} all use" if names else "no provider profile uses"
    raise CommandError(f"--provider: not given, and {which} the handle {handle!r}; pass it")


class Command(BaseCommand):
    help = "Manage provider keys (BYOK). Keys are encrypted at rest and never shown again."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="store a provider key under a handle")
        add.add_argument("handle")
        add.add_argument(
            "--provider",
            default=None,
            help="the provider the key is for (default: the profile that names this handle)",
        )
        add.add_argument("--api-base", default="")
        add.add_argument("--api-key", default=None, help="prefer stdin: arguments show in ps")
        add.add_argument("--keyless", action="store_true", help="a provider that needs no key")
        sub.add_parser("list", help="list handles (never keys)")
        remove = sub.add_parser("remove", help="delete a handle and its key")
        remove.add_argument("handle")
        rotate = sub.add_parser("rotate", help="replace the key of a handle")
        rotate.add_argument("handle")
        rotate.add_argument("--api-key", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "add":
                key = None if options["keyless"] else _read_key(options["api_key"], required=True)
                provider = options["provider"] or _provider_of(options["handle"])
                info = add_credential(
                    handle=options["handle"],
                    provider=provider,
                    api_key=key,
                    api_base=options["api_base"],
                )
                self.stdout.write(f"added {info.handle} ({info.provider}) key {info.masked}")
            elif action == "list":
                rows = list_credentials()
                if not rows:
                    self.stdout.write("(no keys)")
                for info in rows:
                    base = f" {info.api_base}" if info.api_base else ""
                    self.stdout.write(f"{info.handle}\t{info.provider}\t{info.masked}{base}")
            elif action == "remove":
                remove_credential(handle=options["handle"])
                self.stdout.write(f"removed {options['handle']}")
            elif action == "rotate":
                key = _read_key(options["api_key"], required=True)
                assert key is not None
                info = rotate_credential(handle=options["handle"], api_key=key)
                self.stdout.write(f"rotated {info.handle} key {info.masked}")
        except CredentialError as exc:
            raise CommandError(str(exc)) from exc
