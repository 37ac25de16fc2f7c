"""What a reader of team-a reads of a row that mentions other namespaces."""

from __future__ import annotations

from gangweb.access.scope import ADMIN, VIEWER, Scope
from gangweb.api.v1.redact import OTHER, redact

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
