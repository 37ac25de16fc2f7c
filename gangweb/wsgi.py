"""WSGI entry point (HTTP only; the dashboard's websockets need ``gangweb.asgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gangweb.settings")

application = get_wsgi_application()
