"""The Content-Security-Policy of every answer, and the one the API docs pages need instead.

The dashboard's pages (and the sign-in, replay, admin and error pages) take scripts and styles from
gangweb's own ``/static/`` only: no inline script, no inline event handler, no ``style`` attribute or
element in the markup (scripts set styles through the CSSOM, which the policy does not restrict). So
``POLICY`` allows ``'self'`` and nothing inline, and a script injected through some future escaping bug
would not run. ``frame-ancestors 'none'`` keeps every page out of other sites' frames. The policy is
sent on every answer Django makes (JSON included: harmless there); static files are served before the
middleware and carry none.

The API's other HTML pages come from libraries: the docs (Swagger UI and Redoc from
drf-spectacular-sidecar, served without inline scripts: ``gangweb/templates/drf_spectacular/``, the split
Swagger view) and DRF's browsable API. They draw with inline styles (``style`` attributes in DRF's
templates, ``<style>`` elements Redoc writes at run time), show images as ``data:`` URLs and Redoc searches
in a ``blob:`` worker: ``API_HTML_POLICY`` allows those, on those pages only, and scripts stay ``'self'``.
Redoc's footer asks Redocly's CDN for a logo: blocked (no third-party request from an operator's browser,
and clusters are often air-gapped); Redoc hides it.

HSTS is Django's ``SecurityMiddleware`` (``SECURE_HSTS_SECONDS``), sent only on requests that reached
gangweb over TLS (README, ``GANGWEB_HSTS_SECONDS``).
"""

from __future__ import annotations

from functools import wraps

from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"


def _policy(**directives: str) -> str:
    base = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self'",
        "connect-src": "'self'",
        "object-src": "'none'",
        "base-uri": "'none'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in {**base, **directives}.items())


POLICY = _policy()
API_HTML_POLICY = _policy(
    **{"style-src": "'self' 'unsafe-inline'", "img-src": "'self' data:", "worker-src": "'self' blob:"}
)


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """``POLICY`` on every answer that does not carry a policy of its own (``with_policy``)."""

    def process_response(self, request, response):
        response.headers.setdefault(HEADER, POLICY)
        return response


def with_policy(view, policy: str):
    """``view`` answering with ``policy`` instead of ``POLICY``."""

    @wraps(view)
    def answered(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response.headers[HEADER] = policy
        return response

    return answered
