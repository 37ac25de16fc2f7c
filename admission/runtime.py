"""The process-wide webhook, configured from Django settings (read here, passed on as plain values)."""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from admission.handler import Webhook
from admission.policy import AdmissionPolicy
from admission.recorder import DecisionRecorder
from admission.review import MAX_BODY_BYTES
from admission.state import GangIndex


@lru_cache(maxsize=1)
def get_webhook() -> Webhook:
    return Webhook(
        AdmissionPolicy.from_settings(settings),
        GangIndex(),
        DecisionRecorder(),
        max_body_bytes=MAX_BODY_BYTES,
    )
