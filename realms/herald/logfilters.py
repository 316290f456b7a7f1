"""Keeping the application-service protocol's expected answers out of the warnings.

The homeserver asks the platform about every room alias and user it does not know itself
(the heartbeat room's alias at each start, for one); "404, not ours" is the answer the
protocol expects, yet Django's request log warns about every 4xx. Only those two queries'
404s are dropped: any other 4xx, and a refused token on them, is still logged.
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
