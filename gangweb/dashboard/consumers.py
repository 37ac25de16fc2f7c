from channels.generic.websocket import AsyncJsonWebsocketConsumer

from gangweb.events import DASHBOARD_GROUP


class ClusterConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        await self.channel_layer.group_add(DASHBOARD_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        await self.channel_layer.group_discard(DASHBOARD_GROUP, self.channel_name)

    async def gangweb_event(self, message):
        await self.send_json({"event": message["event"], "at": message["at"], "payload": message["payload"]})
