"""Websocket ``ws/cluster/``: the whole picture on connect, then every dashboard event as it happens."""

from __future__ import annotations

import asyncio
import json
import time

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from gangweb.dashboard import live
from gangweb.events import DASHBOARD_GROUP, bind_server_loop

# Close code for "sign in first" (4000-4999 are the application's own).
CLOSE_LOGIN_REQUIRED = 4401


class ClusterConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if not live.dashboard_is_public() and not (user and user.is_authenticated):
            await self.close(code=CLOSE_LOGIN_REQUIRED)
            return
        bind_server_loop(asyncio.get_running_loop())
        await self.channel_layer.group_add(DASHBOARD_GROUP, self.channel_name)
        await self.accept()
        live.ensure_ticker()
        await self._send_state()

    async def disconnect(self, code):
        await self.channel_layer.group_discard(DASHBOARD_GROUP, self.channel_name)

    @classmethod
    async def decode_json(cls, text_data):
        # Garbage from a client is ignored, not a server error that drops the socket.
        try:
            return json.loads(text_data)
        except ValueError:
            return None

    async def receive_json(self, content, **kwargs):
        # A browser that suspects it missed something (tab woke up) asks for the whole picture again.
        if isinstance(content, dict) and content.get("type") == "refresh":
            await self._send_state()

    async def gangweb_event(self, message):
        await self.send_json({"event": message["event"], "at": message["at"], "payload": message["payload"]})

    async def _send_state(self):
        state = await sync_to_async(live.cluster_state, thread_sensitive=True)()
        await self.send_json({"event": live.STATE_EVENT, "at": time.time(), "payload": state})
