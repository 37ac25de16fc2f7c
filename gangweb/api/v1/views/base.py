"""What every v1 view shares: the reader's scope, validated parameters, pages, problem answers, and the
redaction pass over every answer (``gangweb.api.v1.redact``)."""

from __future__ import annotations

from rest_framework.views import APIView

from gangweb.api.v1 import params
from gangweb.api.v1.access import Reads, scope_of
from gangweb.api.v1.problems import AUTHENTICATE
from gangweb.api.v1.redact import redact


class V1:
    """Mixed into APIView and GenericViewSet alike."""

    permission_classes = [Reads]
    pagination_class = params.Page
    # The query parameters the endpoint reads, besides limit/offset/format.
    query_params: tuple[str, ...] = ()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if request.method in ("GET", "HEAD"):
            params.only_known(request.query_params, self.query_params)

    def get_authenticate_header(self, request):
        return AUTHENTICATE

    @property
    def scope(self):
        return scope_of(self.request)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        data = getattr(response, "data", None)
        if response.status_code < 400 and isinstance(data, dict | list):
            response.data = redact(data, scope_of(request))
        return response

    def page(self, rows):
        """A page of ``rows`` (a list or a queryset) as ``{"count","next","previous","results"}``."""
        paginator = self.pagination_class()
        return paginator, paginator.paginate_queryset(rows, self.request, view=self)


class V1View(V1, APIView):
    pass
