"""``pit_msg REALM TEXT [--to AGENT]``: the operator speaks in a realm's Commons."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.services.messages import MessageError, send_operator_message


class Command(BaseCommand):
    help = "Post an [operator] message into a running realm's Commons, mentioning its agents."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="realm id")
        parser.add_argument("text", nargs="+", help="the message")
        parser.add_argument("--to", help="mention only this agent")

    def handle(self, *args: Any, **options: Any) -> None:
        text = " ".join(options["text"])
        try:
            delivery = send_operator_message(options["realm"], text, options.get("to"))
        except MessageError as exc:
            raise CommandError(str(exc)) from exc
        if not delivery.delivered:
            raise CommandError(f"not delivered: {delivery.reason}; the message was chronicled")
        self.stdout.write(f"posted to {options['realm']} ({delivery.event_id})")
