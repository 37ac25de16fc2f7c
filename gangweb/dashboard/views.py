"""The dashboard's pages. The picture is drawn by static/dashboard/cluster.js from ``cluster.state``."""

import logging

from django.contrib.auth.views import redirect_to_login
from django.db import DatabaseError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render

from gangweb.access.scope import scope_for
from gangweb.dashboard import live, replay, timeline
from gangweb.dashboard.scoping import cut_state

logger = logging.getLogger(__name__)


def _may_look(request: HttpRequest) -> bool:
    return live.dashboard_is_public() or request.user.is_authenticated


def cluster(request: HttpRequest) -> HttpResponse:
    if not _may_look(request):
        return redirect_to_login(request.get_full_path())
    # The first picture comes with the page, so it draws before the websocket is even open.
    scope = scope_for(request)
    state = cut_state(live.cluster_state(), scope)
    return render(request, "dashboard/cluster.html", {"state": state, "timeline": _timeline(scope)})


def _timeline(scope) -> dict:
    try:
        return {"cards": timeline.latest_cards(scope=scope), "legend": timeline.EVICTION_LEGEND, "note": ""}
    except DatabaseError as exc:  # the picture is still worth showing without the ledger
        logger.warning("cannot read the ledger for the timeline", exc_info=True)
        return {"cards": [], "legend": timeline.EVICTION_LEGEND, "note": f"cannot read the ledger: {exc}"}


def timeline_list(request: HttpRequest) -> HttpResponse:
    """The latest cards alone, re-fetched by static/dashboard/timeline.js after the websocket reconnects."""
    if not _may_look(request):
        return HttpResponseForbidden("sign in first")
    return render(
        request, "dashboard/_timeline_list.html", {"cards": timeline.latest_cards(scope=scope_for(request))}
    )


def timeline_card(request: HttpRequest, request_id: int) -> HttpResponse:
    """One request's timeline card, re-fetched by static/dashboard/timeline.js when an event names it."""
    if not _may_look(request):
        return HttpResponseForbidden("sign in first")
    card = timeline.request_card(request_id, scope=scope_for(request))
    if card is None:
        raise Http404(f"no preemption request {request_id}")
    return render(request, "dashboard/_timeline_request.html", {"card": card})


def replay_page(request: HttpRequest) -> HttpResponse:
    """The latest trace replay (``gang replay --plots $GANGWEB_REPLAY_DIR``): its table and plots.

    A simulation of a synthetic workload on the trace's cluster: no tenant's objects, so every reader sees it.
    """
    if not _may_look(request):
        return redirect_to_login(request.get_full_path())
    return render(request, "dashboard/replay.html", replay.latest())


def replay_plot(request: HttpRequest, name: str) -> HttpResponse:
    if not _may_look(request):
        return HttpResponseForbidden("sign in first")
    path = replay.plot_path(name)
    if path is None:
        raise Http404(f"no replay plot {name}")
    return FileResponse(path.open("rb"), content_type="image/png")
