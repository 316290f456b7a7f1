"""Expected answers and upstream's expected duplicate stay out of the logs; nothing else
does (realms/herald/logfilters.py; the request log's side: test_views.py)."""

from __future__ import annotations

import logging

import pytest

from realms.herald.logfilters import ClientApiPerListener

pytestmark = pytest.mark.timeout(60)


def _record(metric: str) -> logging.LogRecord:
    return logging.LogRecord(
        "synapse.util.metrics",
        logging.ERROR,
        __file__,
        1,
        "Metric named %s already registered for server %s",
        (metric, "bearpit.local"),
        None,
    )


def test_only_the_per_listener_metric_is_dropped():
    keep = ClientApiPerListener()
    assert not keep.filter(_record("cache_lru_cache_sync_valid_filter_bearpit.local"))
    assert keep.filter(_record("cache_lru_cache_get_users_in_room_bearpit.local"))
    other = logging.LogRecord("synapse.util.metrics", logging.ERROR, __file__, 1, "x", (), None)
    assert keep.filter(other)


def test_the_homeserver_starts_without_an_error_in_its_log(homeserver):
    text = homeserver.config.log_path.read_text(encoding="utf-8")
    assert " ERROR " not in text, text
