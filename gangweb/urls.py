"""HTTP routes. Websocket routes live in ``gangweb/routing.py``.

The admission webhook's paths (``/admission/mutate``, ``/admission/validate``) are answered here only in
the demo (``settings.DEMO``, read per request): anywhere else ``manage.py webhook serve`` serves them in
its own process over TLS (docs/admission.md), and the dashboard process, which browsers reach, is no
second way in to them. Outside the demo they are a 404.
"""

from functools import wraps

from django.conf import settings
from django.contrib import admin
from django.http import Http404
from django.urls import include, path

from admission import urls as admission_urls
from gangweb import health
from gangweb.access import views as access_views
from gangweb.api.v1 import problems

# Under /api/, Django's own 400, 404 and 500 answer in the API's one error shape (RFC 9457).
handler400 = problems.bad_request
handler404 = problems.not_found
handler500 = problems.server_error


def demo_only(view):
    """``view`` in the demo; a 404 anywhere else."""

    @wraps(view)  # keeps csrf_exempt
    def in_the_demo(request, *args, **kwargs):
        if not settings.DEMO:
            raise Http404("the admission webhook is served by `manage.py webhook serve`, not here")
        return view(request, *args, **kwargs)

    return in_the_demo


admission_paths = [
    path(str(route.pattern), demo_only(route.callback), name=route.name)
    for route in admission_urls.urlpatterns
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("login/", access_views.SignInView.as_view(), name="login"),
    path("logout/", access_views.SignOutView.as_view(), name="logout"),
    path("", include((admission_paths, admission_urls.app_name))),
    path("api/", include("gangweb.api.urls")),
    path("", include("gangweb.dashboard.urls")),
]
