from django.apps import AppConfig


class GangwebConfig(AppConfig):
    name = "gangweb"
    verbose_name = "gangweb"

    def ready(self) -> None:
        # The pipeline and the webhook never import the project: their live events leave by the seams
        # connected here (scheduler/publishing.py; docs/ARCHITECTURE.md, "Who may import whom").
        from gangweb import events
        from gangweb.api.v1 import store
        from gangweb.clusterview import reading
        from gangweb.notify import outbox
        from scheduler import publishing
        from scheduler.preemption import events as pipeline_events

        publishing.LEDGER.connect(events.publish)
        pipeline_events.connect_outbox(outbox.enqueue)
        # The recorder counts its own losses: it needs the send that raises when the layer refuses. The
        # decisions are also kept for the API (``/api/v1/decisions``) before they are sent.
        publishing.DECISIONS.connect(store.keep_and_send)
        # A paced build of the cluster's picture yields while this process serves requests.
        reading.count_requests()
