"""The Eviction subresource and PodDisruptionBudget bookkeeping, as the API server and the disruption
controller do them, over an ``ObjectStore``."""

from __future__ import annotations

import math

from scheduler.kube.budgets import label_selector_matches, matching_budgets, pod_is_ready, spends_budget
from scheduler.kube.resources import PDBS, PODS

from . import errors
from .objects import now_rfc3339
from .store import ObjectStore


def _matching_pdbs(store: ObjectStore, pod: dict) -> list[dict]:
    return matching_budgets(pod, store.list(PDBS, pod["metadata"]["namespace"]))


def _scaled(value: int | str, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


# Controllers without a scale subresource: the disruption controller cannot count their pods.
UNSCALABLE = {("batch", "Job"): "jobs.batch"}


def _controller(pod: dict) -> dict | None:
    return next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def _unscalable_controller(pods: list[dict]) -> str | None:
    for pod in pods:
        ref = _controller(pod)
        if ref is not None:
            group = ref.get("apiVersion", "").rpartition("/")[0]
            if (group, ref.get("kind")) in UNSCALABLE:
                return UNSCALABLE[(group, ref.get("kind"))]
    return None


def _sync_failed(pdb: dict, resource: str) -> dict:
    """What the disruption controller leaves when it cannot compute the budget: no disruption allowed, the
    reason in a condition, the rest of the status (and its observedGeneration) as it was."""
    status = dict(pdb.get("status") or {})
    for key in ("currentHealthy", "desiredHealthy", "expectedPods"):
        status.setdefault(key, 0)
    status["disruptionsAllowed"] = 0
    status["conditions"] = [
        {
            "type": "DisruptionAllowed",
            "status": "False",
            "reason": "SyncFailed",
            "message": f"{resource} does not implement the scale subresource",
            "lastTransitionTime": now_rfc3339(),
        }
    ]
    return status


def compute_pdb_status(store: ObjectStore, pdb: dict) -> dict:
    """The status the disruption controller would write for ``pdb`` given the pods in the store.

    ``maxUnavailable`` and a percentage ``minAvailable`` need the number of pods the pods' controllers
    expect, read from their scale subresource: a Job has none, so such a budget over a Job's pods is never
    computed and allows nothing (the real controller's ``SyncFailed``), and pods without a controller are
    expected by nobody, so over those alone it allows nothing; an integer ``minAvailable`` counts the pods
    themselves."""
    spec = pdb.get("spec") or {}
    pods = [
        p
        for p in store.list(PODS, pdb["metadata"]["namespace"])
        if label_selector_matches(spec.get("selector"), (p["metadata"].get("labels") or {}))
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not p["metadata"].get("deletionTimestamp")
    ]
    min_available = spec.get("minAvailable")
    expected = len(pods)
    if spec.get("maxUnavailable") is not None or (
        isinstance(min_available, str) and min_available.endswith("%")
    ):
        unscalable = _unscalable_controller(pods)
        if unscalable:
            return _sync_failed(pdb, unscalable)
        # Pods without a controller are expected by nobody (the real controller's UnmanagedPods warning).
        expected = sum(1 for p in pods if _controller(p) is not None)
    healthy = sum(1 for p in pods if pod_is_ready(p))
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = expected
    return {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": max(0, healthy - desired) if expected > 0 else 0,
        "disruptedPods": dict((pdb.get("status") or {}).get("disruptedPods") or {}),
    }


def refresh_pdb_status(store: ObjectStore, namespace: str | None = None, only_missing: bool = False) -> int:
    """Recompute PDB statuses (all, or only those without one); returns how many were written."""
    count = 0
    for pdb in store.list(PDBS, namespace):
        if only_missing and pdb.get("status"):
            continue
        status = compute_pdb_status(store, pdb)
        store.mutate(
            PDBS,
            pdb["metadata"]["namespace"],
            pdb["metadata"]["name"],
            lambda obj, s=status: obj.__setitem__("status", s),
            subresource="status",
        )
        count += 1
    return count


def _too_many_requests(cause: str, retry_after: int | None) -> errors.ApiError:
    return errors.ApiError(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
        details={"causes": [{"reason": "DisruptionBudget", "message": cause}]},
        retry_after=retry_after,
    )


def _check_budget(pdb: dict, status: dict) -> None:
    name = pdb["metadata"]["name"]
    if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise _too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)
    if status.get("disruptionsAllowed", 0) < 0:
        raise errors.ApiError(
            403,
            "Forbidden",
            f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is negative',
        )
    if status.get("disruptionsAllowed", 0) == 0:
        raise _too_many_requests(
            f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy pods and has "
            f"{status.get('currentHealthy', 0)} currently",
            None,
        )


def _mark_evicted(pod: dict) -> None:
    """The condition the API server adds before deleting an evicted pod (PodDisruptionConditions)."""
    conditions = [
        c
        for c in (pod.setdefault("status", {}).get("conditions") or [])
        if c.get("type") != "DisruptionTarget"
    ]
    conditions.append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
            "lastTransitionTime": now_rfc3339(),
        }
    )
    pod["status"]["conditions"] = conditions


def evict(store: ObjectStore, namespace: str, name: str, eviction: dict, dry_run: bool) -> dict:
    """POST pods/{name}/eviction: check the pod's PDB, spend one disruption, delete the pod.

    Returns the success Status body (HTTP 201); raises ``ApiError`` (404, 429, 500, 400) otherwise.
    """
    if not isinstance(eviction, dict) or eviction.get("kind", "Eviction") != "Eviction":
        raise errors.bad_request("not a Eviction object")
    body_name = (eviction.get("metadata") or {}).get("name")
    if body_name and body_name != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = eviction.get("deleteOptions") or {}
    dry_run = dry_run or "All" in (options.get("dryRun") or [])
    with store.locked():  # the budget check and its spending are one step
        return _evict_locked(store, namespace, name, options, dry_run)


def _evict_locked(store: ObjectStore, namespace: str, name: str, options: dict, dry_run: bool) -> dict:
    pod = store.get(PODS, namespace, name)  # 404 when gone
    preconditions = options.get("preconditions")

    phase = (pod.get("status") or {}).get("phase")
    # Like the API server: terminal, pending and already-terminating pods need no budget.
    if phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
        pdbs: list[dict] = []
    else:
        pdbs = _matching_pdbs(store, pod)
    if len(pdbs) > 1:
        raise errors.ApiError(
            500,
            "InternalError",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        )
    if pdbs:
        pdb = pdbs[0]
        status = pdb.get("status") or compute_pdb_status(store, pdb)
        if spends_budget(pod, pdb, status):
            _check_budget(pdb, status)
            if not dry_run:

                def spend(obj: dict) -> None:
                    new_status = dict(obj.get("status") or status)
                    new_status["disruptionsAllowed"] = new_status.get("disruptionsAllowed", 0) - 1
                    disrupted = dict(new_status.get("disruptedPods") or {})
                    disrupted[name] = now_rfc3339()
                    new_status["disruptedPods"] = disrupted
                    obj["status"] = new_status

                # resourceVersion-checked in the real server; here the store lock serialises it
                store.mutate(PDBS, namespace, pdb["metadata"]["name"], spend, subresource="status")
    if not dry_run:
        store.mutate(PODS, namespace, name, _mark_evicted, subresource="status")
    store.delete(
        PODS,
        namespace,
        name,
        preconditions=preconditions,
        grace_period_seconds=options.get("gracePeriodSeconds"),
        dry_run=dry_run,
    )
    return errors.success_status(201)
