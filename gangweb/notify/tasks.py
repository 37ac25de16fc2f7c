"""Celery tasks of the notifications (thin: the work is ``gangweb/notify/delivery.py``)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from gangweb.notify import delivery


@shared_task(name="gangweb.notify.deliver", ignore_result=True)
def deliver(ids: list[int]) -> None:
    """Send the deliveries ``ids`` once each; each that failed is tried again after its backoff."""
    later: dict[float, list[int]] = {}
    for delivery_id, pause in delivery.send_due(ids):
        later.setdefault(pause, []).append(delivery_id)
    if settings.CELERY_TASK_ALWAYS_EAGER:  # in-process (the demo) the sweep retries instead
        return
    for pause, waiting in later.items():
        deliver.apply_async((waiting,), countdown=pause)


@shared_task(name="gangweb.notify.sweep", ignore_result=True)
def sweep() -> None:
    """Hand every due delivery to ``deliver``: retries whose task was lost, rows committed while the
    broker was down, leases of a worker that died mid-send."""
    ids = delivery.due()
    for start in range(0, len(ids), delivery.MAX_PARALLEL):
        deliver.delay(ids[start : start + delivery.MAX_PARALLEL])
