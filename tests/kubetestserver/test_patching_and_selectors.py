"""The patch flavours and selectors the test server applies, on plain dicts."""

from __future__ import annotations

import pytest

from kubetestserver.patching import PatchError, apply_patch, merge_patch, strategic_merge
from kubetestserver.selectors import parse_field_selector, parse_label_selector

POD = {
    "metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
    "status": {
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    },
}


def test_merge_patch_deletes_with_null_and_replaces_lists():
    patched = merge_patch(POD, {"metadata": {"labels": {"a": None, "b": "2"}}, "status": {"conditions": []}})
    assert patched["metadata"]["labels"] == {"b": "2"} and patched["status"]["conditions"] == []
    assert POD["metadata"]["labels"] == {"a": "1"}, "the original stays untouched"


def test_strategic_merge_merges_conditions_by_type_and_finalizers_as_a_set():
    patched = strategic_merge(
        POD,
        {
            "metadata": {"finalizers": ["x", "y"]},
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "DisruptionTarget", "status": "True"},
                ]
            },
        },
    )
    assert patched["metadata"]["finalizers"] == ["x", "y"]
    assert [(c["type"], c["status"]) for c in patched["status"]["conditions"]] == [
        ("Ready", "False"),
        ("PodScheduled", "True"),
        ("DisruptionTarget", "True"),
    ]


def test_strategic_merge_directives():
    deleted = strategic_merge(
        POD,
        {
            "status": {"conditions": [{"type": "Ready", "$patch": "delete"}]},
            "$setElementOrder/conditions": [{"type": "PodScheduled"}],
        },
    )
    assert [c["type"] for c in deleted["status"]["conditions"]] == ["PodScheduled"]
    replaced = strategic_merge(POD, {"metadata": {"$patch": "replace", "labels": {"z": "9"}}})
    assert replaced["metadata"] == {"labels": {"z": "9"}}
    pruned = strategic_merge(POD, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}})
    assert pruned["metadata"]["finalizers"] == []


def test_bad_patches_are_patch_errors():
    with pytest.raises(PatchError):
        apply_patch("application/json-patch+json", POD, {"op": "add"})
    with pytest.raises(PatchError):
        apply_patch("application/json-patch+json", POD, [{"op": "remove", "path": "/nope"}])
    with pytest.raises(PatchError):
        apply_patch(
            "application/strategic-merge-patch+json", POD, {"status": {"conditions": [{"status": "x"}]}}
        )
    with pytest.raises(PatchError):
        apply_patch("text/plain", POD, {})


@pytest.mark.parametrize(
    "selector, matches",
    [
        ("a=1", True),
        ("a==1", True),
        ("a!=1", False),
        ("a", True),
        ("!a", False),
        ("b", False),
        ("a in (1,2)", True),
        ("a notin (1,2)", False),
        ("a=1,b!=3", True),
        ("", True),
    ],
)
def test_label_selector_strings(selector, matches):
    assert parse_label_selector(selector)(POD) is matches


def test_field_selector_on_dotted_paths():
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    assert parse_field_selector("spec.nodeName=n1,status.phase!=Failed")(pod)
    assert not parse_field_selector("spec.nodeName=n2")(pod)
