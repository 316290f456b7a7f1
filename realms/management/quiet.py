"""What a person running a foreground command reads: its own phase lines, not the log.

The platform logs at INFO for operators of a long-running deployment; in a terminal those
lines (every tool call, every bus set-up) bury the one line per phase the command prints.
At the default verbosity only warnings and errors of the platform's own loggers show, and
refused requests (the server log's 4xx warnings) only at ``-v 2``, which brings everything
back. (The 404s the application-service endpoint answers on purpose are left out of every
log: realms/herald/logfilters.py.)
"""

from __future__ import annotations

import logging
import warnings

_PLATFORM_LOGGERS = ("bearpit", "realms", "ledger", "chronicle")


def quiet_logs(verbosity: int) -> None:
    # The MCP SDK's settings model warns about its own forward reference on import; it says
    # nothing about this platform or its configuration.
    warnings.filterwarnings(
        "ignore",
        message=r"Field 'lifespan' has an incomplete definition",
        module=r"pydantic_settings",
    )
    if verbosity >= 2:
        return
    levels = {**dict.fromkeys(_PLATFORM_LOGGERS, "WARNING"), "django.request": "ERROR"}
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
