"""The Eviction API's budget rule the execution's plan check and the test server share (scheduler/kube/budgets.py)."""

from __future__ import annotations

from scheduler.kube.budgets import label_selector_matches, matching_budgets, spends_budget

from .objects import pdb, pod


def test_label_selector_objects_as_pdbs_use_them():
    labels = {"app": "a", "tier": "gpu"}
    assert label_selector_matches({}, labels), "an empty selector matches every pod"
    assert not label_selector_matches(None, labels), "a missing selector matches none"
    assert label_selector_matches(
        {
            "matchLabels": {"app": "a"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["gpu"]},
                {"key": "x", "operator": "DoesNotExist"},
            ],
        },
        labels,
    )
    assert not label_selector_matches(
        {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}, labels
    )


def test_which_pods_spend_a_budget():
    budget = pdb("budget", app="a")
    ready = pod("p1", labels={"app": "a"})
    assert matching_budgets(ready, [budget]) == [budget]
    assert matching_budgets(pod("p2", labels={"app": "b"}), [budget]) == []
    assert matching_budgets(pod("p3", "team-b", labels={"app": "a"}), [budget]) == []
    status = {"currentHealthy": 2, "desiredHealthy": 1, "disruptionsAllowed": 1}
    assert spends_budget(ready, budget, status)
    assert not spends_budget(pod("p4", labels={"app": "a"}, phase="Succeeded"), budget, status)
    assert not spends_budget(pod("p5", labels={"app": "a"}, node=None), budget, status), (
        "a pending pod spends nothing"
    )
    unready = pod("p6", labels={"app": "a"}, ready=False)
    assert not spends_budget(unready, budget, status), (
        "IfHealthyBudget: the budget is met, so an unready pod is free"
    )
    assert spends_budget(unready, budget, {"currentHealthy": 0, "desiredHealthy": 1})
