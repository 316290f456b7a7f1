"""The gate module's allow-list: realms whose agents may open side channels.

Written here, read by :mod:`realms.herald.gate` inside the homeserver. Changes are
made under a file lock and land with an atomic rename, so the module never reads a
half-written list. It holds whole realm ids, compared exactly.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from django.conf import settings

from realms.ids import check_realm_id

KEY = "side_channel_realms"


def gate_path() -> Path:
    return Path(settings.BEARPIT_HOME) / "homeserver" / "gate.json"


def side_channel_realms() -> set[str]:
    """The realms on the allow-list now."""
    try:
        return set(json.loads(gate_path().read_text(encoding="utf-8"))[KEY])
    except (FileNotFoundError, ValueError, KeyError):
        return set()


def allow_side_channels(realm_id: str, allowed: bool) -> None:
    """Add the realm to the allow-list, or take it off."""
    check_realm_id(realm_id)
    path = gate_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / "gate.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        realms = side_channel_realms()
        if (realm_id in realms) == allowed:
            return
        if allowed:
            realms.add(realm_id)
        else:
            realms.discard(realm_id)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({KEY: sorted(realms)}) + "\n")
        tmp.replace(path)
