"""ASGI entry point: HTTP through Django, websockets through Channels."""

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gangweb.settings")


class StaticFiles(ASGIStaticFilesHandler):
    """Django's static files handler, where a path leading out of the static directories is a 404.

    Django's handler answers only ``Http404`` itself: the ``SuspiciousFileOperation`` of a path such as
    ``/static/..%2f..%2fmanage.py`` reached the server as a 500 with a traceback."""

    def serve(self, request):
        try:
            return super().serve(request)
        except SuspiciousFileOperation as error:
            raise Http404("no such static file") from error


# Django must be set up before the consumers (and the models they import) load.
# The dashboard's few vendored assets are served by the app itself (from the finders, no
# collectstatic step), so one uvicorn process is the whole web tier, in the demo and in the cluster.
django_http = StaticFiles(get_asgi_application())

from gangweb.api.v1.uploads import UploadGuard  # noqa: E402

# Snapshot uploads are checked (size, login, role, throttle) before Django reads their body.
django_http = UploadGuard(django_http)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from gangweb.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_http,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

from django.conf import settings  # noqa: E402

from gangweb import metrics  # noqa: E402

if settings.GANGWEB_WEB_METRICS_PORT:
    metrics.serve_web_metrics(settings.GANGWEB_WEB_METRICS_PORT)

import sys  # noqa: E402

# A request's thread takes the interpreter lock back after each socket or database wait, behind whichever
# thread computes (the ticker's build, the demo's beat tasks): up to a switch interval each time. At 1 ms
# instead of 5, bench map's first paint at 5,000 nodes went from 1.54-1.57 s to 0.81-0.86 s (median of
# five, load 5-8, docs/dashboard.md).
sys.setswitchinterval(0.001)

from gangweb.heap import settle  # noqa: E402

settle()  # the code loaded so far lives as long as the process: out of the collector's sight
