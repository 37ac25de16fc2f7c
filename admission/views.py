"""Thin Django adapters over ``admission.handler``: same answers as the production server."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from admission.handler import MUTATE, VALIDATE
from admission.runtime import get_webhook


def _answer(request: HttpRequest, route: str) -> HttpResponse:
    if request.method != "POST":
        response = HttpResponse(
            b'{"kind":"Status","code":405,"message":"use POST"}', status=405, content_type="application/json"
        )
        response["Allow"] = "POST"
        return response
    webhook = get_webhook()
    declared = request.META.get("CONTENT_LENGTH") or ""
    rejected = webhook.precheck(
        request.META.get("CONTENT_TYPE", ""), int(declared) if declared.isdigit() else None
    )
    if rejected is None:
        # Read the stream directly: request.body would apply DATA_UPLOAD_MAX_MEMORY_SIZE and raise.
        body = request.read(webhook.max_body_bytes + 1)
        answer = webhook.too_large() if len(body) > webhook.max_body_bytes else webhook.handle(route, body)
    else:
        answer = rejected
    return HttpResponse(answer.body, status=answer.status, content_type="application/json")


@csrf_exempt
def mutate(request: HttpRequest) -> HttpResponse:
    return _answer(request, MUTATE)


@csrf_exempt
def validate(request: HttpRequest) -> HttpResponse:
    return _answer(request, VALIDATE)
