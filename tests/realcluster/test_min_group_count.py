"""What Kubernetes' own API server (v1.37) enforces of a CompositePodGroup's ``minGroupCount`` (KEP-6012), the
reason gangweb's webhook checks none of it (docs/kubernetes-versions.md): a validating webhook is called only
after the API server's own validation has passed, so it never sees what these tests see rejected."""

from __future__ import annotations

import json

import pytest


def composite(namespace: str, name: str, policy: dict) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "workloadRef": {"workloadName": "serving", "templateName": name},
            "schedulingPolicy": policy,
        },
    }


def workload(namespace: str, min_group_count: int | None) -> dict:
    gang = {} if min_group_count is None else {"minGroupCount": min_group_count}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "Workload",
        "metadata": {"name": "serving", "namespace": namespace},
        "spec": {
            "podGroupTemplates": [],
            "compositePodGroupTemplates": [
                {
                    "name": "serve",
                    "schedulingPolicy": {"gang": gang},
                    "podGroupTemplates": [{"name": "replica", "schedulingPolicy": {"gang": {"minCount": 2}}}],
                }
            ],
        },
    }


def create(real_cluster, obj: dict, *extra: str):
    return real_cluster.run("create", "-f", "-", *extra, input=json.dumps(obj), check=False)


@pytest.mark.parametrize(
    ("value", "said"), [(0, "Required value"), (-1, "must be greater than or equal to 1")]
)
def test_the_api_server_refuses_a_composite_min_group_count_below_one(real_cluster, namespace, value, said):
    done = create(real_cluster, composite(namespace, "serve", {"gang": {"minGroupCount": value}}))
    assert done.returncode != 0
    assert "spec.schedulingPolicy.gang.minGroupCount: " in done.stderr and said in done.stderr, done.stderr


def test_the_api_server_refuses_a_gang_composite_without_min_group_count(real_cluster, namespace):
    done = create(real_cluster, composite(namespace, "serve", {"gang": {}}))
    assert done.returncode != 0 and "minGroupCount" in done.stderr, done.stderr


def test_min_group_count_is_fixed_at_creation_and_may_exceed_the_groups_there_are(real_cluster, namespace):
    # No child group exists, nor is any declared on a CompositePodGroup: children name their parent later.
    made = create(real_cluster, composite(namespace, "serve", {"gang": {"minGroupCount": 5}}))
    assert made.returncode == 0, made.stderr
    changed = real_cluster.run(
        "patch",
        "-n",
        namespace,
        "compositepodgroups.v1alpha3.scheduling.k8s.io",
        "serve",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"schedulingPolicy": {"gang": {"minGroupCount": 2}}}}),
        check=False,
    )
    assert changed.returncode != 0 and "immutable" in changed.stderr, changed.stderr


def test_a_workload_template_s_min_group_count_is_required_positive_not_held_against_its_templates(
    real_cluster, namespace
):
    for value in (None, 0, -1):  # the v1alpha3 type calls it optional; the API server requires it
        refused = create(real_cluster, workload(namespace, value), "--dry-run=server")
        assert refused.returncode != 0, refused.stderr
        assert "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount" in refused.stderr
    # 5 groups of one declared template: a template can be stamped out many times, so the count is not
    # held against the templates declared.
    accepted = create(real_cluster, workload(namespace, 5), "--dry-run=server")
    assert accepted.returncode == 0, accepted.stderr
