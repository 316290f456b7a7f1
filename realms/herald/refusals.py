"""Which client API paths agents may not use, and why.

Read by :mod:`realms.herald.endpoints` inside the homeserver. Paths are matched as
Synapse routes them: raw (percent-encoded) and case-sensitive, so a path spelled any
other way is not routed to the endpoint either. A rule matches a whole path segment
and everything under it.

No Synapse and no Django here.
"""

from __future__ import annotations

import re

CLIENT_PREFIX = "/_matrix/client"

# What follows ``/_matrix/client/<version>`` (and, under ``unstable``, an MSC namespace
# such as ``org.matrix.msc3814.v1``), each with the name its refusal gives. The platform
# uses none of them: its runtimes sync, join and send; the rest it does as the
# application service, which is never refused.
_REFUSED: tuple[tuple[str, str], ...] = (
    ("to-device messages", r"/sendToDevice"),
    ("end-to-end keys", r"/keys"),
    ("key backups", r"/room_keys"),
    ("dehydrated devices", r"/dehydrated_device"),
    ("stored filters", r"/user/[^/]+/filter"),
    ("account data", r"/user/[^/]+/(rooms/[^/]+/)?(account_data|tags)"),
    ("OpenID tokens", r"/user/[^/]+/openid"),
    ("profiles", r"/profile"),
    ("the user directory", r"/user_directory"),
    ("room aliases and the room directory", r"/directory"),
    ("the public room list", r"/publicRooms"),
    ("knocking", r"/knock"),
    ("reports", r"/(rooms|users)/[^/]+/report"),
    ("presence", r"/presence"),
    ("pushers", r"/pushers"),
    ("third-party ids", r"/account/3pid"),
    ("third-party lookups", r"/thirdparty"),
    ("passwords", r"/account/password"),
    ("login tokens", r"/login/get_token"),
    ("delayed events", r"/delayed_events"),
    ("rendezvous sessions", r"/rendezvous"),
    ("media", r"/media"),
)
REFUSED = tuple((what, re.compile(pattern + r"(/|$)")) for what, pattern in _REFUSED)
_VERSION = re.compile(r"r0|v\d+|unstable")


def endpoint_path(path: str) -> str | None:
    """The part of a client API path after its version, or None if it is not one."""
    if not path.startswith(CLIENT_PREFIX + "/"):
        return None
    segments = path[len(CLIENT_PREFIX) + 1 :].split("/")
    if segments and _VERSION.fullmatch(segments[0]):
        segments = segments[1:]
        if segments and "." in segments[0]:
            segments = segments[1:]
    return "/" + "/".join(segments)


def refusal(path: str) -> str | None:
    """What the path reaches, when agents may not reach it."""
    rest = endpoint_path(path)
    if rest is None:
        return None
    return next((what for what, rule in REFUSED if rule.match(rest)), None)
