"""The process-wide webhook, configured from Django settings (read here, passed on as plain values)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings

from admission.handler import Webhook
from admission.policy import AdmissionPolicy
from admission.recorder import DecisionRecorder
from admission.review import MAX_BODY_BYTES
from admission.state import PodGroupCache
from scheduler.preemption.runtime import mode_for
from scheduler.publishing import DECISIONS

if TYPE_CHECKING:
    from admission.watch import PodGroupWatch


@lru_cache(maxsize=1)
def get_webhook() -> Webhook:
    return Webhook(
        AdmissionPolicy.from_settings(settings, mode_for),
        PodGroupCache(),
        DecisionRecorder(DECISIONS),
        max_body_bytes=MAX_BODY_BYTES,
    )


def podgroup_watch(cache: PodGroupCache) -> PodGroupWatch | None:
    """The watch that fills ``cache`` from the API server when this process has a cluster
    (``GANGWEB_CLUSTER=kube``: KUBECONFIG or in-cluster); without one (the demo's simulated cluster) the
    cache is marked complete as it is, empty."""
    if settings.GANGWEB_CLUSTER != "kube":
        cache.mark_synced()
        return None
    from admission.watch import PodGroupWatch

    return PodGroupWatch.from_environment(cache)
