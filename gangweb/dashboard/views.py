"""The dashboard's pages (server-side shells) and the JSON they fetch, all cut to the reader's scope.

Each page renders its frame and a first copy of its data; ``static/dashboard/<page>.js`` fetches the
JSON endpoints in ``data_urls`` (``gangweb/dashboard/urls.py``) and follows the live stream. The data
functions live in ``gangweb/dashboard/queries/`` so the API v1 can serve the same answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.db import DatabaseError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseForbidden, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from gangweb.access.scope import Scope
from gangweb.dashboard import live, replay, scoping, stream
from gangweb.dashboard.queries import decisions, overview, preemptions, whatif
from scheduler.engine import DUMP_COMMAND, SnapshotError

logger = logging.getLogger(__name__)
UPLOAD_LIMIT = 64 * 2**20


def reader(request: HttpRequest) -> Scope:
    return scoping.reader_scope(request, public=live.dashboard_is_public())


def page(template: str, title: str, nav: str):
    def decorate(view: Callable):
        @wraps(view)
        def shell(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            scope = reader(request)
            if not scope.authenticated:
                return redirect_to_login(request.get_full_path())
            context = {"title": title, "nav": nav, "scope": scope, "data_urls": data_urls()}
            try:
                context["approvals"] = overview.waiting_approvals(scope)
            except DatabaseError:
                context["approvals"] = []
            context.update(view(request, scope, *args, **kwargs) or {})
            return render(request, template, context)

        return shell

    return decorate


def data(view: Callable):
    @wraps(view)
    def answer(request: HttpRequest, *args, **kwargs) -> JsonResponse:
        scope = reader(request)
        if not scope.authenticated:
            return JsonResponse({"detail": "sign in first"}, status=403)
        try:
            return JsonResponse(view(request, scope, *args, **kwargs))
        except DatabaseError as exc:
            logger.warning("dashboard data: cannot read the ledger", exc_info=True)
            return JsonResponse({"detail": f"cannot read the ledger: {exc}"}, status=503)

    return answer


def data_urls() -> dict[str, str]:
    """The JSON each page reads: /api/v1/, but for the ``dashboard/data/`` endpoints v1 does not serve yet
    (docs/dashboard.md)."""
    return {
        "map": reverse("api:v1:map"),
        "overview": reverse("api:v1:overview"),
        "podgroups": reverse("api:v1:podgroups"),
        "usage": reverse("api:v1:usage"),
        "gang": reverse("api:v1:podgroup-detail", args=["NS", "NAME"]),
        "requests": reverse("api:v1:request-list"),
        "preemptions": reverse("dashboard:data-preemptions"),
        "decisions": reverse("dashboard:data-decisions"),
        "whatIf": reverse("dashboard:data-what-if"),
        "live": "/ws/live/",
        "gangPage": reverse("dashboard:gang", args=["NS", "NAME"]),
        "logout": "/logout/",
        # The API v1's approve mode (issue 12): POST, an operator's session with its CSRF token.
        "requestAction": "/api/v1/requests/ID/ACTION/",
        "request": "/api/v1/requests/ID/",
    }


# --- pages ---------------------------------------------------------------------------------------


@page("dashboard/overview.html", "Overview", "overview")
def overview_page(request, scope):
    return {}


@page("dashboard/gangs.html", "Gangs", "gangs")
def gangs_page(request, scope):
    return {}


@page("dashboard/gang.html", "Gang", "gangs")
def gang_page(request, scope, namespace: str, name: str):
    return {
        "namespace": namespace,
        "name": name,
        "visible": scope.sees(namespace),
        "can_operate": scope.may("approve", namespace),
    }


@page("dashboard/preemptions.html", "Preemptions", "preemptions")
def preemptions_page(request, scope):
    return {}


@page("dashboard/whatif.html", "What if?", "what-if")
def whatif_page(request, scope):
    return {"dump_command": DUMP_COMMAND}


@page("dashboard/decisions.html", "Admission decisions", "decisions")
def decisions_page(request, scope):
    return {}


# --- data ----------------------------------------------------------------------------------------


@require_GET
@data
def preemptions_data(request, scope):
    return {**preemptions.cards(scope, request.GET.dict()), "seq": stream.log().last("ledger")}


@require_GET
@data
def decisions_data(request, scope):
    return {**decisions.decisions(scope), "seq": stream.log().last("decisions")}


@require_POST
@data
def what_if_data(request, scope):
    """Multipart ``snapshot`` (a dump; else the live cluster) and ``podGroup``; without ``podGroup``
    only the dump's gangs are listed. Nothing is executed or recorded."""
    upload = request.FILES.get("snapshot")
    podgroup = request.POST.get("podGroup") or ""
    if not podgroup and request.content_type == "application/json":
        podgroup = (json.loads(request.body or b"{}") or {}).get("podGroup", "")
    try:
        if upload is not None:
            if upload.size > UPLOAD_LIMIT:
                return {"error": f"the file is {upload.size} bytes; at most {UPLOAD_LIMIT} are read"}
            objects = whatif.read_upload(upload)
            listed = whatif.gangs_of(objects)
            if not podgroup:
                return {"gangs": listed}
            return {"gangs": listed, **whatif.compare(objects, podgroup, None)}
        if not podgroup:
            return {"gangs": whatif.gangs_of(whatif.live_objects(), scope)}
        if not scope.sees(podgroup.partition("/")[0]):
            return {"error": f"no gang {podgroup} that you may see"}
        return whatif.compare_live(podgroup, scope)
    except SnapshotError as exc:
        return {"error": str(exc)}


def replay_page(request: HttpRequest) -> HttpResponse:
    """The latest trace replay (``gang replay --plots $GANGWEB_REPLAY_DIR``): its table and plots.

    A simulation of a synthetic workload on the trace's cluster: no tenant's objects, so every reader sees it.
    """
    if not reader(request).authenticated:
        return redirect_to_login(request.get_full_path())
    return render(request, "dashboard/replay.html", replay.latest())


def replay_plot(request: HttpRequest, name: str) -> HttpResponse:
    if not reader(request).authenticated:
        return HttpResponseForbidden("sign in first")
    path = replay.plot_path(name)
    if path is None:
        raise Http404(f"no replay plot {name}")
    return FileResponse(path.open("rb"), content_type="image/png")
