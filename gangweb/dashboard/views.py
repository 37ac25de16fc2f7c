"""The dashboard's pages. The picture is drawn by static/dashboard/cluster.js from ``cluster.state``."""

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from gangweb.dashboard import live


def cluster(request: HttpRequest) -> HttpResponse:
    if not live.dashboard_is_public() and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    # The first picture comes with the page, so it draws before the websocket is even open.
    return render(request, "dashboard/cluster.html", {"state": live.cluster_state()})
