"""The gate module's allow-list: realms whose agents may open side channels.

Written here, read by :mod:`realms.herald.gate` inside the homeserver. Changes are
made under a file lock and land with an atomic rename, so the module never reads a
half-written list.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from django.conf import settings

from realms.herald.config import USER_PREFIX, normalise_localpart


def gate_path() -> Path:
    return Path(settings.BEARPIT_HOME) / "homeserver" / "gate.json"


def realm_prefix(realm_id: str) -> str:
    """The localpart prefix every agent of the realm shares."""
    return f"{USER_PREFIX}{normalise_localpart(realm_id)}-"


def allow_side_channels(realm_id: str, allowed: bool) -> None:
    """Add the realm to the allow-list, or take it off."""
    path = gate_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = realm_prefix(realm_id)
    with (path.parent / "gate.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            prefixes = set(json.loads(path.read_text(encoding="utf-8"))["side_channel_prefixes"])
        except (FileNotFoundError, ValueError, KeyError):
            prefixes = set()
        if (prefix in prefixes) == allowed:
            return
        if allowed:
            prefixes.add(prefix)
        else:
            prefixes.discard(prefix)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"side_channel_prefixes": sorted(prefixes)}) + "\n")
        tmp.replace(path)
