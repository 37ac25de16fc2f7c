from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def cluster(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/cluster.html", {})
