"""What a reader of team-a reads of a row that mentions other namespaces."""

from __future__ import annotations

from gangweb.access.scope import ADMIN, VIEWER, Scope
from gangweb.clusterview.redact import OTHER, redact

TEAM_A = Scope(user="a", per_namespace={"team-a": VIEWER})


def test_objects_of_other_namespaces_keep_their_numbers_and_lose_their_names():
    victim = {
        "kind": "PodGroup",
        "namespace": "batch",
        "name": "low",
        "priority": 10,
        "pods": ["batch/low-0"],
    }
    assert redact(victim, TEAM_A) == {
        "kind": "PodGroup",
        "namespace": None,
        "name": None,
        "priority": 10,
        "pods": None,
        "otherNamespace": True,
    }
    mine = {"namespace": "team-a", "name": "train", "pods": ["team-a/train-0"]}
    assert redact(mine, TEAM_A) == mine


def test_names_in_text_and_keys_are_hidden_but_other_slashes_are_not():
    text = "dry run batch/low-0: ok; team-a/train-0 waits; 0/4 nodes; scheduling.k8s.io/v1beta1; 3/8 GPUs"
    assert redact(text, TEAM_A) == (
        f"dry run {OTHER}: ok; team-a/train-0 waits; 0/4 nodes; scheduling.k8s.io/v1beta1; 3/8 GPUs"
    )
    assert redact({"placement": {"team-b/x-0": "node-1", "team-a/train-0": "node-2"}}, TEAM_A) == {
        "placement": {OTHER: "node-1", "team-a/train-0": "node-2"}
    }


def test_an_all_namespace_reader_reads_everything_as_it_is():
    row = {"namespace": "batch", "message": "dry run batch/low-0"}
    assert redact(row, Scope(user="ops", everywhere=ADMIN)) is row


def test_a_plan_waiting_for_another_namespace_s_lost_work_budget_hides_that_namespace():
    from scheduler.engine import parse_snapshot, plan
    from scheduler.engine.allowance import Allowance
    from scheduler.engine.builders import node, pod, podgroup

    snap = parse_snapshot(
        [
            node("a"),
            node("clock", gpus=0),
            podgroup("low", namespace="team-b", min_count=1, priority=1, mode="all"),
            pod("low-0", namespace="team-b", node="a", group="low", gpus=8, priority=1),
            pod("clock", node="clock", start="2026-07-01T01:00:00Z"),
            podgroup("hi", namespace="team-a", min_count=1, priority=100),
            pod("hi-0", namespace="team-a", group="hi", gpus=8, priority=100),
        ]
    ).with_lost_work(allowance=Allowance(default=0.0))
    waiting = plan(snap, "team-a/hi").details() | {"reason": plan(snap, "team-a/hi").reason}
    assert "team-b" in waiting["reason"] and "team-b" in str(waiting["stats"])
    seen = redact(waiting, TEAM_A)
    assert "team-b" not in str(seen) and OTHER in seen["reason"], seen


def test_the_api_servers_answer_inside_another_namespaces_entry_loses_the_name_it_quotes():
    """CI of stop 36 found it: the eviction result of another team's pod said `pods "train-0022-3" not found`."""
    entry = {
        "kind": "eviction.result",
        "namespace": "batch",
        "message": 'batch/train-0022-3 evicted after 1 attempt(s): 404 pods "train-0022-3" not found',
        "data": {"message": 'pods "train-0022-3" not found', "code": 404},
    }
    seen = redact(entry, TEAM_A)
    assert "train-0022" not in str(seen), seen
    assert seen["message"] == f"{OTHER} evicted after 1 attempt(s): 404 pods {OTHER} not found"
    assert seen["data"]["code"] == 404
    # the reader's own entry keeps the name the API server quoted
    mine = entry | {"namespace": "team-a", "message": 'pods "train-0" not found'}
    assert redact(mine, TEAM_A)["message"] == 'pods "train-0" not found'
