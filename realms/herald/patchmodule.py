"""The shape of a Synapse module whose whole work is one patch, made while Synapse parses its
config.

Synapse parses the config of every module it loads before it builds its database pools or
handles a request, so a patch made there is in place for everything the homeserver then
does. Each patch applies itself once however often it is called. Synapse imports these
modules in its own process: nothing here may import Django.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar


class ConfigTimePatch:
    """What Synapse loads; a subclass names its patch in ``patch``."""

    patch: ClassVar[Callable[[], None]]

    def __init__(self, config: dict[str, Any], api: object) -> None:
        self.config = config

    @classmethod
    def parse_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        cls.patch()
        return config
