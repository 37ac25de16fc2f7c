"""``POST /api/v1/requests/{id}/approve|reject|cancel``: an operator's word on a request.

The actions themselves (the re-check before an approved plan runs, the ledger entry naming who acted)
are the pipeline's: ``scheduler.preemption.ledger.approvals.approve|reject|cancel(request_id, by=...)``.
This view checks the role in the request's namespace (operator, ``Scope.may``), calls the action and
answers the request as it then is. Until that module exists the endpoints answer 501 Not Implemented.
"""

from __future__ import annotations

from importlib import import_module

from django.core.exceptions import ValidationError as ModelValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.response import Response

from gangweb.api.v1 import serializers
from gangweb.api.v1.access import SignedIn
from gangweb.api.v1.queries import ledger as q
from gangweb.api.v1.views.base import V1View
from scheduler.preemption.models import PreemptionRequest

ACTIONS_MODULE = "scheduler.preemption.ledger.approvals"


class NotYet(APIException):
    status_code = 501
    default_detail = "approvals are not part of this build"


class Conflict(APIException):
    status_code = 409
    default_detail = "the request is not in a state this action applies to"


def action_function(action: str):
    """The pipeline's action function, or None while ``ACTIONS_MODULE`` is missing."""
    try:
        module = import_module(ACTIONS_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name and ACTIONS_MODULE.startswith(exc.name):
            return None
        raise
    return getattr(module, action)


class RequestAction(V1View):
    permission_classes = [SignedIn]
    action_name = ""

    @extend_schema(
        request=None,
        responses={
            200: serializers.Request,
            409: OpenApiResponse(serializers.Problem),
            501: OpenApiResponse(serializers.Problem),
        },
    )
    def post(self, request, pk: int):
        found = q.requests(self.scope).filter(pk=pk).first()
        if found is None:
            raise NotFound(f"no request {pk} that you may see")
        if not self.scope.may(self.action_name, found.namespace):
            raise PermissionDenied(f"{self.action_name} needs the operator role in {found.namespace}")
        act = action_function(self.action_name)
        if act is None:
            raise NotYet(f"{self.action_name}: {ACTIONS_MODULE} is not installed in this build")
        try:
            act(found.pk, by=self.scope.user)
        except ModelValidationError as exc:
            raise Conflict("; ".join(exc.messages)) from None
        fresh = PreemptionRequest.objects.get(pk=found.pk)
        return Response(serializers.Request(fresh, context={"request": request}).data)


class Approve(RequestAction):
    """Approve a plan waiting for an operator (``approve`` mode): it is re-checked, then executed."""

    action_name = "approve"


class Reject(RequestAction):
    """Reject a plan waiting for an operator: nothing is evicted."""

    action_name = "reject"


class Cancel(RequestAction):
    """Cancel a request that has not finished."""

    action_name = "cancel"
