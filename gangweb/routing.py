"""Websocket routes, one list for the whole project."""

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path, re_path

from gangweb.dashboard import consumers


class UnknownPathConsumer(AsyncWebsocketConsumer):
    """Refuses the handshake (HTTP 403) for paths nobody serves; without it Channels' router raises
    and the server answers 500 with a traceback in the log."""

    async def connect(self):
        await self.close()


websocket_urlpatterns = [
    path("ws/live/", consumers.LiveConsumer.as_asgi()),
    re_path(r"", UnknownPathConsumer.as_asgi()),
]
