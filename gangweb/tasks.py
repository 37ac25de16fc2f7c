"""gangweb's own Celery tasks (the pipeline's are in scheduler/preemption/tasks.py)."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="gangweb.sample_usage", ignore_result=True)
def sample_usage() -> None:
    """One GPU-usage sample for ``/api/v1/usage``, kept six hours in ``store.USAGE``: the samples' one
    writer, so the history has the beat's spacing whoever reads it."""
    from gangweb.api.v1.queries.usage import sample
    from gangweb.api.v1.store import USAGE

    try:
        USAGE.push([sample()])
    except Exception as exc:  # an unreadable cluster: the next beat tries again, one line in the log
        logger.warning("cannot sample GPU usage", extra={"error": str(exc)})


@shared_task(name="gangweb.sample_idle", ignore_result=True)
def sample_idle() -> None:
    """One idle sample for ``/api/v1/idle/`` and the idle gauges (docs/idle.md)."""
    from gangweb.dashboard.idle import record_sample

    try:
        record_sample()
    except Exception as exc:  # an unreadable cluster or database: the next beat tries again
        logger.warning("cannot sample idle GPUs", extra={"error": str(exc)})
