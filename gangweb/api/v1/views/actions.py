"""``POST /api/v1/requests/{id}/approve|reject|cancel``: an operator's word on a request.

The actions themselves (the role check in the request's namespace, the re-check before an approved plan
runs, the ledger entry naming who acted) are the pipeline's: ``scheduler/preemption/actions.py``. This view
calls the action with the reader's ``Scope`` and maps its errors onto HTTP: not allowed 403, not found (or
not visible) 404, wrong state or a stale plan 409; then answers the request as it now is.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.response import Response

from gangweb.api.v1 import serializers
from gangweb.api.v1.access import SignedIn
from gangweb.api.v1.queries import ledger as q
from gangweb.api.v1.views.base import V1View
from scheduler.preemption import actions
from scheduler.preemption.models import PreemptionRequest


class Conflict(APIException):
    status_code = 409
    default_detail = "the request is not in a state this action applies to"


class RequestAction(V1View):
    permission_classes = [SignedIn]
    action_name = ""

    @extend_schema(
        request=None,
        responses={
            200: serializers.Request,
            403: OpenApiResponse(serializers.Problem),
            404: OpenApiResponse(serializers.Problem),
            409: OpenApiResponse(serializers.Problem),
        },
    )
    def post(self, request, pk: int):
        found = q.requests(self.scope).filter(pk=pk).first()
        if found is None:
            raise NotFound(f"no request {pk} that you may see")
        act = getattr(actions, self.action_name)
        try:
            act(found.pk, by=self.scope)
        except actions.NotAllowed as exc:
            raise PermissionDenied(str(exc)) from None
        except actions.NotFound as exc:
            raise NotFound(str(exc)) from None
        except actions.Conflict as exc:
            raise Conflict(str(exc)) from None
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
