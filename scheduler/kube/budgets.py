"""The Eviction API's PodDisruptionBudget rule, on raw API objects: which budgets select a pod, and
whether evicting the pod takes one of a budget's allowed disruptions.

One implementation for two callers: the product checks a whole plan against the budgets before its
first real eviction (``scheduler/preemption/execution/budgets.py``), and the Kubernetes API test server
(``kubetestserver``) answers evictions with it. The test server imports this module, never the other
way round.
"""

from __future__ import annotations

from scheduler.engine.selectors import parse_label_selector


def pod_is_ready(pod: dict) -> bool:
    """The pod's ``Ready`` condition is ``True``."""
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def label_selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """A ``metav1.LabelSelector`` object, with the engine's semantics (one implementation): an empty
    selector matches all, a missing (None) or invalid one matches nothing, as for PDBs in policy/v1."""
    try:
        return parse_label_selector(selector, "selector").matches(labels)
    except ValueError:
        return False


def matching_budgets(pod: dict, budgets: list[dict]) -> list[dict]:
    """The PodDisruptionBudgets among ``budgets`` whose selector selects ``pod`` (same namespace)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    return [
        pdb
        for pdb in budgets
        if (pdb.get("metadata") or {}).get("namespace") == meta.get("namespace")
        and label_selector_matches((pdb.get("spec") or {}).get("selector"), labels)
    ]


def spends_budget(pod: dict, pdb: dict, status: dict) -> bool:
    """Whether evicting ``pod`` takes one of ``pdb``'s allowed disruptions, as the Eviction API decides:
    terminal, pending and terminating pods never do; an unready pod does not when the budget's
    ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (``IfHealthyBudget``) while the budget is met."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed", "Pending") or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if pod_is_ready(pod):
        return True
    policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
    desired = status.get("desiredHealthy", 0)
    return not (policy == "AlwaysAllow" or (status.get("currentHealthy", 0) >= desired and desired > 0))
