"""Where a realm lives on disk, under ``settings.BEARPIT_HOME``: the one place that
computes a realm's paths.

``realms/<realm>/agents/<agent>/home`` (private home), ``shared/`` (shared folder),
``logs/<agent>.log``, ``outputs/``, ``archive/``; sockets in ``BEARPIT_HOME/run``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from django.conf import settings

from realms.ids import InvalidRealmId
from realms.ids import check_realm_id as _check_realm_id

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")

#: Paths as the sandbox sees them.
SANDBOX_HOME = "/home/agent"
SANDBOX_SHARED = "/realm/shared"
SANDBOX_SOCKETS = "/run/bearpit"
SANDBOX_TMP = "/tmp"  # noqa: S108 -- a private tmpfs inside the sandbox, not the host's
BIRTH_DIR_NAME = ".bearpit"
BIRTH_FILE_NAME = "birth.json"


class LayoutError(ValueError):
    """An id that cannot name a directory safely."""


def check_id(kind: str, value: str) -> str:
    if not _SAFE_ID.match(value) or ".." in value:
        raise LayoutError(
            f"{kind} {value!r}: expected 1-80 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def check_realm_id(realm_id: str) -> str:
    try:
        return _check_realm_id(realm_id)
    except InvalidRealmId as exc:
        raise LayoutError(str(exc)) from None


def home_root() -> Path:
    return Path(settings.BEARPIT_HOME)


def install_tag() -> str:
    """A short tag for this installation, so two installs on one host never share names."""
    digest = hashlib.sha256(str(home_root().resolve()).encode()).hexdigest()
    return f"bearpit-{digest[:10]}"


def sockets_dir() -> Path:
    return home_root() / "run"


def realms_root() -> Path:
    return home_root() / "realms"


def realm_dir(realm_id: str) -> Path:
    return realms_root() / check_realm_id(realm_id)


def agent_dir(realm_id: str, agent_id: str) -> Path:
    return realm_dir(realm_id) / "agents" / check_id("agent id", agent_id)


def home_dir(realm_id: str, agent_id: str) -> Path:
    return agent_dir(realm_id, agent_id) / "home"


def birth_path(realm_id: str, agent_id: str) -> Path:
    return home_dir(realm_id, agent_id) / BIRTH_DIR_NAME / BIRTH_FILE_NAME


def etc_dir(realm_id: str, agent_id: str) -> Path:
    """Generated /etc files (passwd, group, hosts) for the agent's sandbox."""
    return agent_dir(realm_id, agent_id) / "etc"


def home_image(realm_id: str, agent_id: str) -> Path:
    return agent_dir(realm_id, agent_id) / "home.img"


def shared_dir(realm_id: str) -> Path:
    return realm_dir(realm_id) / "shared"


def shared_image(realm_id: str) -> Path:
    return realm_dir(realm_id) / "shared.img"


def logs_dir(realm_id: str) -> Path:
    return realm_dir(realm_id) / "logs"


def log_path(realm_id: str, agent_id: str) -> Path:
    return logs_dir(realm_id) / f"{check_id('agent id', agent_id)}.log"


def outputs_dir(realm_id: str) -> Path:
    return realm_dir(realm_id) / "outputs"


def recording_dir(realm_id: str) -> Path:
    """The realm's recorded model calls (``realms.replay.recording``); never mounted."""
    return realm_dir(realm_id) / "recording"


def archive_dir(realm_id: str) -> Path:
    """Where concluding (and ``pit_archive`` without ``-o``) writes the realm's archive."""
    return realm_dir(realm_id) / "archive"
