"""Bases for the ``pit_*`` commands that act on one realm."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chronicle import selectors


class RealmCommand(BaseCommand):
    """Takes a realm id as its first argument and refuses an unknown one clearly."""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="realm id")

    def handle(self, *args: Any, **options: Any) -> None:
        realm_id = options["realm"]
        if not selectors.realm_known(realm_id):
            raise CommandError(f"realm {realm_id!r}: no such realm")
        self.handle_realm(realm_id, **options)

    def handle_realm(self, realm_id: str, **options: Any) -> None:
        raise NotImplementedError  # each command says what it does with the realm
