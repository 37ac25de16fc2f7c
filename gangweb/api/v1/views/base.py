"""What every v1 view shares: the reader's scope, validated parameters, pages, problem answers, and the
redaction pass over every answer (``gangweb.clusterview.redact``)."""

from __future__ import annotations

from rest_framework.views import APIView

from gangweb.api.v1 import params
from gangweb.api.v1.access import Reads, scope_of
from gangweb.api.v1.problems import AUTHENTICATE
from gangweb.clusterview.redact import redact


def _drop_data(response):
    """After the answer is written: DRF's Response sits in a reference cycle (its renderer context names
    the view, the view the response), which would keep ``data``, every row of the answer, alive until the
    cyclic collector comes by. The bytes are written; the rows may go (see ``released``)."""
    response.data = None


def released(serializer):
    """``serializer.data`` as a plain list or dict, the serializer made to let go of it and of its rows.

    A DRF serializer is a reference cycle (each field points at its parent, ``data`` at the
    serializer), so whatever it holds, the page of model instances with their decoded JSON and the
    answer built from them, outlived the request until the cyclic garbage collector found it. At a
    100-plan page (500 KB) that was tens of thousands of objects an answer, promoted through the
    collector's generations and walked again by each collection: the slowest answers of ``plans``,
    ``evictions`` and ``ledger?kind=`` (docs/measurements.md). Released, the
    rows die by reference counting when the answer has been written; the cycle left is the few
    field objects."""
    data = serializer.data
    for held in (serializer, getattr(serializer, "child", None)):  # many=True: the child holds the rows too
        if held is not None:
            held.instance, held._args = None, ()
            held.__dict__.pop("_data", None)
    return list(data) if isinstance(data, list) else dict(data)


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
        if hasattr(response, "add_post_render_callback"):
            response.add_post_render_callback(_drop_data)
        return response

    def page(self, rows):
        """A page of ``rows`` (a list or a queryset) as ``{"count","next","previous","results"}``."""
        paginator = self.pagination_class()
        return paginator, paginator.paginate_queryset(rows, self.request, view=self)


class V1View(V1, APIView):
    pass
