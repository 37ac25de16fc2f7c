"""The demo's own pods through the admission webhook: each gang the simulated cluster submits is reviewed
pod by pod by the process's ``Webhook`` (``admission.runtime.get_webhook``), as the API server would send
it, so ``/decisions/`` shows what the webhook does. The simulated world already puts its pods in their
PodGroups; it is reviewed as its controller creates it (no PodGroup named yet), and the webhook's answer
is recorded, its patch not applied."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from admission.handler import MUTATE
from admission.labels import MIN_COUNT_ANNOTATION, POD_GROUP_LABEL
from admission.review import review_for
from admission.runtime import get_webhook
from scheduler.cluster import SubmitsGangs

logger = logging.getLogger(__name__)


def as_created(pod: dict[str, Any], min_count: int) -> dict[str, Any]:
    """The pod as its controller creates it for gangweb's own gang source (docs/admission.md): its PodGroup
    in the ``gangweb.io/pod-group`` label and minCount annotation, none named in the spec yet (the webhook's
    patch names it), not bound, no status."""
    meta = pod["metadata"]
    labels = {**(meta.get("labels") or {}), POD_GROUP_LABEL: pod["spec"]["schedulingGroup"]["podGroupName"]}
    annotations = {**(meta.get("annotations") or {}), MIN_COUNT_ANNOTATION: str(min_count)}
    spec = {k: v for k, v in pod["spec"].items() if k not in ("schedulingGroup", "nodeName")}
    return {
        "apiVersion": pod["apiVersion"],
        "kind": pod["kind"],
        "metadata": {**meta, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def admit_submitted(cluster: Any, changes: list[dict[str, Any]]) -> int:
    """Review the pods of every gang submitted in ``changes``; returns how many were reviewed."""
    if not isinstance(cluster, SubmitsGangs):
        return 0
    webhook = get_webhook()
    reviewed = 0
    for change in changes:
        if change.get("type") != "gang-submitted":
            continue
        min_count, pods = cluster.pods_of(change["podGroup"])
        for pod in pods:
            answer = webhook.handle(MUTATE, orjson.dumps(review_for(as_created(pod, min_count))))
            if answer.status != 200:
                logger.warning("the webhook refused a demo pod", extra={"status": answer.status})
            reviewed += 1
    return reviewed
