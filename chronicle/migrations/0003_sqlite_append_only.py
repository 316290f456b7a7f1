"""On SQLite, refuse UPDATE and DELETE on the Chronicle's tables at the database too."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from chronicle.guard import sqlite_install, sqlite_remove


def install(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in sqlite_install():
        schema_editor.execute(statement, params=None)


def remove(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in sqlite_remove():
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("chronicle", "0002_append_only_trigger")]
    operations = [migrations.RunPython(install, remove)]
