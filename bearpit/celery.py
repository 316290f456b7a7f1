"""The Celery application. Tasks live in each app's ``tasks`` module; the worker's
signal handlers sit beside them (``realms.tasks``), as this module is below every app."""

from __future__ import annotations

import os

from celery import Celery

from bearpit.startup import settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")
settings_or_exit("celery")

app = Celery("bearpit")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
