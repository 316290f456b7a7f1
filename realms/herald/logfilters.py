"""Keeping what is expected out of the warnings and errors: two filters, one for the
platform's request log and one for the homeserver's (which loads it by name: no Django).

The homeserver asks the platform about every room alias and user it does not know itself
(the heartbeat room's alias at each start, for one); "404, not ours" is the answer the
protocol expects, yet Django's request log warns about every 4xx. Only those two queries'
404s are dropped: any other 4xx, and a refused token on them, is still logged.

Synapse builds its client API once per listener, and the homeserver has two (loopback TCP
and the Unix socket), plus the one the platform's endpoint filter wraps: each copy's sync
servlet registers the same cache metric, and Synapse logs an ERROR for every copy after the
first, at every start. Its own code says it relies on that; only that line is dropped.
"""

from __future__ import annotations

import logging

QUERY_PATHS = ("/_matrix/app/v1/rooms/", "/_matrix/app/v1/users/")


class ExpectedQueryMisses(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) != 404:
            return True
        path = str(getattr(getattr(record, "request", None), "path", ""))
        return not path.startswith(QUERY_PATHS)


# The one metric Synapse registers once per copy of its client API (rest/client/sync.py).
PER_LISTENER_METRIC = "cache_lru_cache_sync_valid_filter"


class ClientApiPerListener(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Metric named %s already registered"):
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        return not (args and str(args[0]).startswith(PER_LISTENER_METRIC))
