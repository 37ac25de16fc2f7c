"""The Celery task that ensures the PodGroups admitted pods name (``admission/ensurer.py`` does the work).

Thin: it reads the cluster, runs one ensurer pass with the admission policy from settings, and records
each PodGroup it created as a ``podgroup.created`` ledger entry and live event. Run by beat every
``GANGWEB_ENSURE_INTERVAL_SECONDS`` (gangweb/settings.py); Celery finds it because ``admission`` is an
installed app. The task keeps the name ``scheduler.ensure_podgroups`` it had when it lived in the
scheduler package, so a beat and workers of different versions agree during a rollout.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from admission import ensurer
from admission.policy import AdmissionPolicy
from scheduler.cluster import ClusterError, current_objects
from scheduler.preemption import ledger
from scheduler.preemption.runtime import get_cluster, mode_for

logger = logging.getLogger(__name__)

# Per worker process: the last message logged per (namespace, group, outcome), so a gang that keeps
# waiting for its owner is logged when its situation changes, not on every beat.
_last_ensure_messages: dict[str, str] = {}


@shared_task(name="scheduler.ensure_podgroups", ignore_result=True)
def ensure_podgroups() -> dict:
    """Create the PodGroups admitted pods name but that do not exist yet (admission/ensurer.py)."""
    cluster = get_cluster()
    try:
        objects = current_objects(cluster)
    except ClusterError as exc:
        logger.error("cannot read the cluster snapshot; no PodGroup ensured", extra={"error": str(exc)})
        return {"created": [], "error": str(exc)}
    results = ensurer.ensure_podgroups(cluster, objects, AdmissionPolicy.from_settings(settings, mode_for))
    summary: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for result in results:
        summary.setdefault(result.outcome, []).append(result.key)
        seen[result.key] = f"{result.outcome}: {result.message}"
        if result.outcome == ensurer.CREATED:
            _record_created_podgroup(result)
        elif _last_ensure_messages.get(result.key) != seen[result.key]:
            log = logger.warning if result.outcome == ensurer.FAILED else logger.info
            log("PodGroup %s not created (%s): %s", result.key, result.outcome, result.message)
    # Only what is still missing is remembered: a gang that got its group is forgotten.
    _last_ensure_messages.clear()
    _last_ensure_messages.update(seen)
    return {"created": summary.pop(ensurer.CREATED, []), **summary}


def _record_created_podgroup(result: ensurer.Ensured) -> None:
    spec = result.podgroup.get("spec") or {}
    data = {
        "podGroup": result.key,
        "pods": result.pods,
        "spec": spec,
        "annotations": (result.podgroup.get("metadata") or {}).get("annotations") or {},
    }
    ledger.record_podgroup_created(result.namespace, result.name, result.message, data)
