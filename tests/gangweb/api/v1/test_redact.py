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


def test_the_preemptors_own_entry_loses_the_names_the_api_server_gives_its_victim():
    """CI of stop 36 again: the entry of team A's request (team A's namespace, so visible) says what the API
    server answered about team B's pod, and the decision view, the ledger and the live feed show it."""
    message = 'team-b/train-0022-3 evicted after 1 attempt(s): 404 pods "train-0022-3" not found'
    entry = {
        "kind": "eviction.result",
        "namespace": "team-a",
        "message": message,
        "data": {"pod": "team-b/train-0022-3", "message": 'pods "train-0022-3" not found', "code": 404},
    }
    seen = redact(entry, TEAM_A)
    assert "train-0022" not in str(seen) and "team-b" not in str(seen), seen
    assert seen["message"] == f"{OTHER} evicted after 1 attempt(s): 404 pods {OTHER} not found"
    assert seen["namespace"] == "team-a" and seen["data"]["code"] == 404
    # the live feed's eviction event: team A's gang, team B's pod, no namespace of its own
    event = {
        "podGroup": "team-a/llm",
        "pod": "team-b/train-0022-3",
        "victimUnit": "PodGroup team-b/train-0022",
        "message": 'Operation cannot be fulfilled on pods "train-0022-3": Precondition failed: UID in '
        "precondition: 7a1, UID in object meta: 9c2",
    }
    assert "train-0022" not in str(redact(event, TEAM_A))
    assert redact(event, TEAM_A)["podGroup"] == "team-a/llm"


def test_what_kubernetes_says_of_another_namespaces_eviction_names_nothing_of_it():
    """The answers of policy/v1 Eviction (pkg/registry/core/pod/storage/eviction.go) and of the API server
    around it, each in an entry about team B's pod: the names they give, quoted or not, are hidden."""
    answers = [
        # 429 with its cause, as `kubectl drain` prints it
        "Cannot evict pod as it would violate the pod's disruption budget. "
        "The disruption budget train-pdb needs 4 healthy pods and has 3 currently",
        "Cannot evict pod as it would violate the pod's disruption budget. "
        "The disruption budget train-pdb is still being processed by the server.",
        'Timeout: couldn\'t update PodDisruptionBudget "train-pdb" due to conflicts',
        'poddisruptionbudget.policy "train-pdb" is forbidden: pdb disruptions allowed is negative',
        'pods "train-7" is forbidden: User "system:serviceaccount:gangweb:gangweb" cannot create resource '
        '"pods/eviction" in API group "" in the namespace "team-b"',
        'pods "train-7" is forbidden: unable to create new content in namespace team-b because it is being '
        "terminated",
        # the client's transport error quotes the URL it called
        "request failed: HTTPSConnectionPool(host='10.0.0.1', port=6443): Max retries exceeded with url: "
        "/api/v1/namespaces/team-b/pods/train-7/eviction?dryRun=All (Caused by ReadTimeoutError())",
    ]
    for answer in answers:
        # in team A's entry naming team B's pod, and in team B's eviction row
        entry = {"namespace": "team-a", "message": f"team-b/train-7: attempt 2 answered {answer}"}
        row = {"namespace": "team-b", "name": "train-7", "apiMessage": answer}
        for text in (redact(entry, TEAM_A)["message"], redact(row, TEAM_A)["apiMessage"]):
            assert "train" not in text and "team-b" not in text and OTHER in text, text
    # a namespace not seen is hidden wherever Kubernetes names it, a namespace seen is left as it is
    text = 'namespaces "team-b" not found; GET /api/v1/namespaces/team-a/pods/train-0 ok; in the namespace "team-a"'
    assert redact(text, TEAM_A) == (
        f'namespaces {OTHER} not found; GET /api/v1/namespaces/team-a/pods/train-0 ok; in the namespace "team-a"'
    )


def test_text_about_the_readers_own_objects_keeps_its_names_and_words():
    mine = (
        "team-a/train-0 NOT evicted after 3 attempt(s): 429 Cannot evict pod: the disruption budget was spent"
    )
    assert redact(mine, TEAM_A) == mine
    assert (
        redact('team-a/train-0: pods "train-0" not found', TEAM_A)
        == 'team-a/train-0: pods "train-0" not found'
    )
    # a hidden pod named like a word of OTHER does not garble the text
    assert redact("team-b/other: gone", TEAM_A) == f"{OTHER}: gone"
