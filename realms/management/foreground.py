"""The base of the commands that run a realm in the foreground on the embedded platform
(``pit_up``, ``pit_rerun``): its start after the checks, and their one line per phase."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from realms.embedded.platform import EmbeddedPlatform
from realms.preflight import PreflightError, start_embedded_platform


class ForegroundCommand(BaseCommand):
    """Starts the embedded platform, after its checks, and prints one line per phase."""

    def say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    def start_platform(self, platform: EmbeddedPlatform) -> bool:
        """Whether it started; a failed check is one line (CommandError), Ctrl-C is False."""
        try:
            start_embedded_platform(platform)
        except PreflightError as exc:
            raise CommandError(str(exc)) from exc
        except KeyboardInterrupt:
            self.say("interrupted before a realm was launched")
            return False
        return True
