"""The dashboard's pages (server-side shells) and the JSON they fetch, all cut to the reader's scope.

Each page renders its frame and a first copy of its data; ``gangweb/static/dashboard/<page>.js`` fetches the
JSON endpoints in ``data_urls`` (``gangweb/dashboard/urls.py``), all of them API v1's, and follows the live
stream. What the pages render first is read from ``gangweb/clusterview/`` and ``overview.py``, never the API.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.db import DatabaseError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render
from django.urls import reverse

from gangweb.access.scope import scope_for
from gangweb.clusterview import rows as cluster_rows
from gangweb.clusterview import whatif
from gangweb.dashboard import overview, replay
from scheduler.engine import DUMP_COMMAND

logger = logging.getLogger(__name__)


def page(template: str, title: str, nav: str):
    def decorate(view: Callable):
        @wraps(view)
        def shell(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            scope = scope_for(request)
            if not scope.authenticated:
                if scope.signed_in:
                    return no_role_page(request, scope)
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


def no_role_page(request: HttpRequest, scope) -> HttpResponse:
    """A signed-in user no role is granted to: who they are, how an administrator grants one, a sign-out.
    Sent back to /login/ instead, they were signed in already and went round in a loop."""
    return render(request, "access/no_role.html", {"who": scope.user}, status=403)


def data_urls() -> dict[str, str]:
    """What each page reads: the API v1 (docs/dashboard.md), the live stream, and the page paths."""
    return {
        "api": reverse("api:v1:root"),  # its ``kubernetes`` part: what the cluster serves (the banner)
        "map": reverse("api:v1:map"),
        "overview": reverse("api:v1:overview"),
        "idle": reverse("api:v1:idle"),
        "idleGpuHours": reverse("api:v1:idle-per-hour"),
        "podgroups": reverse("api:v1:podgroups"),
        "usage": reverse("api:v1:usage"),
        "gang": reverse("api:v1:podgroup-detail", args=["NS", "NAME"]),
        "node": reverse("api:v1:node-detail", args=["NAME"]),
        "requests": reverse("api:v1:request-list"),
        "evictions": reverse("api:v1:eviction-list"),
        # /preemptions/, /decisions/ and What if? (the lab and a gang page's) read the API v1
        "preemptions": reverse("api:v1:preemptions"),
        "lostGpuHours": reverse("api:v1:preemptions-lost"),
        "decisionGroups": reverse("api:v1:decision-groups"),
        "decisionSummary": reverse("api:v1:decision-summary"),
        "simulate": reverse("api:v1:simulate"),
        "simulatePodGroups": reverse("api:v1:simulate-podgroups"),
        "queues": reverse("api:v1:queues"),
        # not a URL: simulate's ``policies`` for What if?, every policy, the default first
        "whatIfPolicies": ",".join(whatif.POLICY_ORDER),
        "live": "/ws/live/",
        "gangPage": reverse("dashboard:gang", args=["NS", "NAME"]),
        "nodePage": reverse("dashboard:node", args=["NAME"]),
        "logout": "/logout/",
        # The API v1's approve mode (issue 12): POST, an operator's session with its CSRF token.
        "requestAction": "/api/v1/requests/ID/ACTION/",
        "request": "/api/v1/requests/ID/",
        "requestPage": reverse("dashboard:request", args=[0]).replace("/0/", "/ID/"),
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
    # A gang the cluster no longer has keeps its history; the page does not offer its members or a plan.
    return {
        "namespace": namespace,
        "name": name,
        "visible": scope.sees(namespace),
        "present": cluster_rows.podgroup(scope, namespace, name) is not None,
        "can_operate": scope.may("approve", namespace),
    }


@page("dashboard/node.html", "Node", "overview")
def node_page(request, scope, name: str):
    """One node (``GET /api/v1/nodes/{name}/``): what the map's click on its squares opens."""
    return {"name": name}


@page("dashboard/preemptions.html", "Preemptions", "preemptions")
def preemptions_page(request, scope):
    return {}


@page("dashboard/request.html", "Decision", "preemptions")
def request_page(request, scope, pk: int):
    """One preemption request as a decision (docs/dashboard.md "Decision view"), from GET /api/v1/requests/{id}/."""
    return {"request_id": pk}


@page("dashboard/whatif.html", "What if?", "what-if")
def whatif_page(request, scope):
    return {"dump_command": DUMP_COMMAND}


@page("dashboard/decisions.html", "Admission decisions", "decisions")
def decisions_page(request, scope):
    return {}


@page("dashboard/queues.html", "Queues", "queues")
def queues_page(request, scope):
    """Kueue, Volcano, KAI and YuniKorn queues, a tree per system (docs/queues.md), read from /api/v1/queues/."""
    return {}


@page("dashboard/replay.html", "Trace replay", "replay")
def replay_page(request, scope):
    """The latest trace replay (``gang replay --plots $GANGWEB_REPLAY_DIR``): its table and plots.

    A simulation of a synthetic workload on the trace's cluster: no tenant's objects, so every reader sees it.
    """
    return replay.latest()


def replay_plot(request: HttpRequest, name: str) -> HttpResponse:
    if not scope_for(request).authenticated:
        return HttpResponseForbidden("sign in first")
    path = replay.plot_path(name)
    if path is None:
        raise Http404(f"no replay plot {name}")
    return FileResponse(path.open("rb"), content_type="image/png")
