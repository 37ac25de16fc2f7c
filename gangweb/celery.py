"""The Celery application.

Broker and result backend come from ``REDIS_URL`` (see settings); without it tasks run eagerly in
the calling process, so the demo works on a machine with nothing but Python.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gangweb.settings")

app = Celery("gangweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
