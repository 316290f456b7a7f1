"""Production shape: the homeserver on PostgreSQL, in its own C-collated database."""

from __future__ import annotations

from dataclasses import replace

import psycopg
import pytest

from bearpit.env import parse_database_url
from realms.herald.config import HomeserverConfig
from realms.herald.homeserver import free_port, healthy, start_homeserver

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def test_homeserver_runs_on_its_own_postgres_database(tmp_path, settings):
    main = parse_database_url("BEARPIT_TEST_POSTGRES_URL", settings.POSTGRES_URL)
    main = replace(main, name="postgres")
    config = HomeserverConfig.from_settings(home=tmp_path, port=free_port(), database=main)
    assert config.synapse_database_name == "postgres_synapse"
    conninfo = f"host={main.host} port={main.port or 5432} user={main.user} dbname=postgres"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS postgres_synapse")
    handle = start_homeserver(config, timeout=100)
    try:
        assert healthy(config.socket_path)
        with psycopg.connect(conninfo) as conn:
            row = conn.execute(
                "SELECT datcollate, datctype FROM pg_database WHERE datname = 'postgres_synapse'"
            ).fetchone()
        assert row == ("C", "C")
    finally:
        handle.stop()
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS postgres_synapse")
