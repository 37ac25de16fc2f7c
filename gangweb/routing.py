"""Websocket routes, one list for the whole project."""

from django.urls import path

from gangweb.dashboard import consumers

websocket_urlpatterns = [
    path("ws/cluster/", consumers.ClusterConsumer.as_asgi()),
]
