"""Thin Django adapters over ``admission.handler`` (filled in below)."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST


@csrf_exempt
@require_POST
def mutate(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"error": "not ready"}, status=400)


@csrf_exempt
@require_POST
def validate(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"error": "not ready"}, status=400)
