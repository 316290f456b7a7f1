"""The Celery application. Tasks live in each app's ``tasks`` module."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")

app = Celery("bearpit")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
