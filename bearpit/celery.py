"""The Celery application. Tasks live in each app's ``tasks`` module."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")

app = Celery("bearpit")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _compile_runtime_bytecode(**_: object) -> None:
    """Each worker process compiles the agent runtime's bytecode before its first
    provisioning waits for it (realms/forge/bytecode.py)."""
    from realms.forge import bytecode

    bytecode.start_compiling()
