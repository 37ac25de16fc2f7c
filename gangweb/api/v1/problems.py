"""One error shape for every 4xx/5xx of the API: RFC 9457 ``application/problem+json``.

``{"type", "title", "status", "detail", "instance"}``, plus ``errors`` (``{parameter or field: [messages]}``)
for validation failures. A 401 carries ``WWW-Authenticate`` offering Bearer and Basic. DRF views get it
from ``exception_handler`` (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``); Django's own 400, 404 and 500
under ``/api/`` from ``bad_request``, ``not_found`` and ``server_error`` (``gangweb/urls.py`` handlers).

A database that does not answer (``DATABASE_UNAVAILABLE``) is a 503 with ``Retry-After``, not a 500: the
request was fine and will succeed once PostgreSQL is back. The API says it in this shape, the pages in a
plain HTML page (``gangweb/templates/503.html``); either way without touching the database.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.template import loader
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)

CONTENT_TYPE = "application/problem+json"
# Both ways in are offered: gangweb and Kubernetes tokens (Bearer), local users (Basic).
AUTHENTICATE = 'Bearer realm="gangweb", Basic realm="gangweb"'
TYPE_BASE = "https://gangweb.io/problems/"
# What Django raises when PostgreSQL is down, restarting or out of connections (and for a lost connection).
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
# A restart or failover of PostgreSQL takes seconds; the connect timeout alone is 2 s.
RETRY_AFTER_SECONDS = 10
UNAVAILABLE_DETAIL = f"the database is not answering; try again in {RETRY_AFTER_SECONDS} s"

_TITLES = {
    400: "invalid request",
    401: "authentication required",
    403: "forbidden",
    404: "not found",
    405: "method not allowed",
    406: "not acceptable",
    409: "conflict",
    411: "length required",
    413: "request too large",
    415: "unsupported media type",
    429: "too many requests",
    500: "internal error",
    503: "service unavailable",
}


def problem(
    status_code: int, detail: str, *, instance: str = "", errors: dict | None = None
) -> dict[str, Any]:
    title = _TITLES.get(status_code, "error")
    body: dict[str, Any] = {
        "type": TYPE_BASE + title.replace(" ", "-"),
        "title": title,
        "status": status_code,
        "detail": detail,
        "instance": instance,
    }
    if errors:
        body["errors"] = errors
    return body


def _errors(data: Any) -> dict[str, list[str]]:
    """DRF's error detail as ``{name: [messages]}`` (a bare list is the body's, ``non_field_errors``)."""
    if isinstance(data, dict):
        return {
            str(key): [str(m) for m in (value if isinstance(value, list) else [value])]
            if not isinstance(value, dict)
            else [f"{k}: {v}" for k, v in _errors(value).items()]
            for key, value in data.items()
        }
    if isinstance(data, list):
        return {"non_field_errors": [str(m) for m in data]}
    return {}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _summary(errors: dict[str, list[str]]) -> str:
    return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())


def exception_handler(exc: Exception, context: dict) -> Response | None:
    request = context.get("request")
    instance = request.get_full_path() if request is not None else ""
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        response = Response(problem(401, str(exc.detail), instance=instance), status=401)
        response["WWW-Authenticate"] = AUTHENTICATE
    elif isinstance(exc, DATABASE_UNAVAILABLE):
        # One line, no traceback (DRF swallowed the exception): every request says the same meanwhile.
        logger.warning("database unavailable: %s", _first_line(exc), extra={"path": instance})
        response = Response(problem(503, UNAVAILABLE_DETAIL, instance=instance), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    elif isinstance(exc, RequestDataTooBig):  # Django's cap on a body read into memory
        response = Response(problem(413, str(exc), instance=instance), status=413)
    elif isinstance(exc, exceptions.ValidationError | exceptions.ParseError) and not isinstance(
        exc.detail, str
    ):
        errors = _errors(exc.detail)
        response = Response(problem(400, _summary(errors), instance=instance, errors=errors), status=400)
    else:
        response = drf_exception_handler(exc, context)
        if response is None:  # not an API exception: a bug. Logged, answered in the same shape.
            logger.exception("API view failed", extra={"path": instance})
            response = Response(
                problem(500, "internal error; the server log has the details", instance=instance), status=500
            )
        else:
            detail = response.data.get("detail") if isinstance(response.data, dict) else None
            if detail is None:
                errors = _errors(response.data)
                response.data = problem(
                    response.status_code, _summary(errors), instance=instance, errors=errors
                )
            else:
                response.data = problem(response.status_code, str(detail), instance=instance)
            if response.status_code == 401:
                response["WWW-Authenticate"] = AUTHENTICATE
    response.content_type = CONTENT_TYPE
    return response


def problem_response(status_code: int, detail: str, request=None) -> JsonResponse:
    """A problem answered outside DRF (Django's 404/500 handlers)."""
    instance = request.get_full_path() if request is not None else ""
    return JsonResponse(
        problem(status_code, detail, instance=instance), status=status_code, content_type=CONTENT_TYPE
    )


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception=None):
    """Django's own 400: a body it cannot read before any view runs (an empty or broken multipart body)."""
    if _is_api(request):
        if isinstance(exception, MultiPartParserError):
            detail = f"the multipart body cannot be read: {_first_line(exception)}"
        else:
            detail = "the request cannot be read"
        return problem_response(status.HTTP_400_BAD_REQUEST, detail, request)
    return defaults.bad_request(request, exception)


def not_found(request, exception=None):
    if _is_api(request):
        return problem_response(status.HTTP_404_NOT_FOUND, f"no such path: {request.path}", request)
    return defaults.page_not_found(request, exception or Http404())


def unavailable(request) -> HttpResponse:
    """503 with ``Retry-After``: problem+json under ``/api/``, an HTML page elsewhere; no database needed."""
    if _is_api(request):
        response = problem_response(503, UNAVAILABLE_DETAIL, request)
    else:
        page = loader.get_template("503.html").render({"retry_after": RETRY_AFTER_SECONDS})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def server_error(request):
    # Django calls this handler while handling the exception (and logs it, traceback included).
    if isinstance(sys.exc_info()[1], DATABASE_UNAVAILABLE):
        return unavailable(request)
    if _is_api(request):
        return problem_response(500, "internal error; the server log has the details", request)
    return defaults.server_error(request)
