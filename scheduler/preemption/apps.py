from django.apps import AppConfig


class PreemptionConfig(AppConfig):
    name = "scheduler.preemption"
    # The app was the package ``scheduler`` before the pipeline had a package of its own. The label keeps
    # its table names (scheduler_preemptionrequest, ...), its migration history and its admin URLs.
    label = "scheduler"
    verbose_name = "gangweb preemption pipeline"

    def ready(self) -> None:
        from scheduler import tracing
        from scheduler.preemption import healthwatch, runtime, triggers

        runtime.on_cluster_built(triggers.watch)  # detection on a PodGroup's Unschedulable event
        runtime.on_cluster_built(healthwatch.watch)  # gang health judged from the same events
        # Traces when the OTEL_* variables ask for them (scheduler/tracing.py); off, this imports nothing.
        tracing.setup("gangweb")
