"""Websocket ``ws/cluster/``: the whole picture on connect, then every dashboard event as it happens,
each cut to the reader's scope (``gangweb/dashboard/scoping.py``).

A signed-in reader's socket also joins its session's and its user's groups (``gangweb.access.sessions``):
signing out closes it (4401), a changed role or namespaces closes it so the page reconnects with the new
scope (4403). Every ``GANGWEB_SESSION_RECHECK_SECONDS`` it re-reads its session as a backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from gangweb.access import sessions
from gangweb.access.liveness import session_scope
from gangweb.access.scope import DEMO_READER
from gangweb.dashboard import live
from gangweb.dashboard.scoping import cut_event, cut_state
from gangweb.events import DASHBOARD_GROUP, bind_server_loop

# Close code for "sign in first" (4000-4999 are the application's own).
CLOSE_LOGIN_REQUIRED = sessions.CLOSE_SIGNED_OUT


class ClusterConsumer(AsyncJsonWebsocketConsumer):
    reader = None
    groups_joined: tuple[str, ...] = ()
    _recheck: asyncio.Task | None = None

    async def connect(self):
        user = self.scope.get("user")
        session = self.scope.get("session")
        self.session_key = getattr(session, "session_key", None)
        if user is not None and user.is_authenticated:
            found = await database_sync_to_async(session_scope)(self.session_key)
            if found is None:
                await self.close(code=CLOSE_LOGIN_REQUIRED)
                return
            self.user_id, self.reader = found
            groups = (
                DASHBOARD_GROUP,
                sessions.user_group(self.user_id),
                sessions.session_group(self.session_key),
            )
        elif live.dashboard_is_public():
            self.user_id, self.reader, groups = None, DEMO_READER, (DASHBOARD_GROUP,)
        else:
            await self.close(code=CLOSE_LOGIN_REQUIRED)
            return
        bind_server_loop(asyncio.get_running_loop())
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined = groups
        await self.accept()
        if self.user_id is not None:
            self._recheck = asyncio.get_running_loop().create_task(self._recheck_session())
        live.ensure_ticker()
        await self._send_state()

    async def disconnect(self, code):
        if self._recheck is not None:
            self._recheck.cancel()
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)

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
        payload = cut_event(message["event"], message["payload"], self.reader)
        if payload is not None:
            await self.send_json({"event": message["event"], "at": message["at"], "payload": payload})

    async def access_close(self, message):
        """Sent by ``gangweb.access.sessions``: this socket's session ended or its scope changed."""
        await self.close(code=int(message.get("code") or CLOSE_LOGIN_REQUIRED))

    async def _recheck_session(self):
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(float(settings.GANGWEB_SESSION_RECHECK_SECONDS))
                try:
                    found = await database_sync_to_async(session_scope)(self.session_key)
                except Exception:  # the database is away: check again next turn
                    continue
                if found is None or found[0] != self.user_id:
                    await self.close(code=sessions.CLOSE_SIGNED_OUT)
                    return
                if found[1] != self.reader:
                    await self.close(code=sessions.CLOSE_SCOPE_CHANGED)
                    return

    async def _send_state(self):
        state = await sync_to_async(live.cluster_state, thread_sensitive=True)()
        await self.send_json(
            {"event": live.STATE_EVENT, "at": time.time(), "payload": cut_state(state, self.reader)}
        )
