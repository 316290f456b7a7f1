"""On PostgreSQL, refuse UPDATE and DELETE on the Chronicle's tables at the database.

TRUNCATE stays allowed: it is how a test database is emptied between tests, and no
application path issues it.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

TABLES = ("chronicle_event", "chronicle_message")

FUNCTION = """
CREATE OR REPLACE FUNCTION bearpit_chronicle_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the chronicle is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def install(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION, params=None)
    for table in TABLES:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION bearpit_chronicle_append_only();"
        )


def remove(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};")
    schema_editor.execute("DROP FUNCTION IF EXISTS bearpit_chronicle_append_only();")


class Migration(migrations.Migration):
    dependencies = [("chronicle", "0001_initial")]
    operations = [migrations.RunPython(install, remove)]
