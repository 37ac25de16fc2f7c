from django.apps import AppConfig


class GangwebConfig(AppConfig):
    name = "gangweb"
    verbose_name = "gangweb"

    def ready(self) -> None:
        # The pipeline and the webhook never import the project: their live events go through the
        # publishers handed in here (docs/ARCHITECTURE.md, "Who may import whom").
        from admission import runtime as admission_runtime
        from gangweb import events
        from gangweb.api.v1.queries import decisions
        from gangweb.notify import outbox
        from scheduler.preemption import events as pipeline_events

        pipeline_events.connect(events.publish, outbox.enqueue)
        # The recorder counts its own losses: it needs the send that raises when the layer refuses. The
        # decisions are also kept for the API (``/api/v1/decisions``) before they are sent.
        admission_runtime.connect_publisher(decisions.keep_and_send)
