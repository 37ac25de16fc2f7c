import json

import pytest

from scheduler.engine import SnapshotError, load_snapshot, parse_snapshot
from scheduler.engine.builders import as_list, node, pdb, pod, podgroup, priority_class


def _objects():
    return [
        node("n1"),
        podgroup("g", min_count=1, priority=5),
        pod("p", group="g"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}},
    ]


def test_list_json_and_multidoc_yaml_give_the_same_snapshot(tmp_path):
    import yaml

    as_json = tmp_path / "s.json"
    as_json.write_text(json.dumps(as_list(_objects())))
    as_yaml = tmp_path / "s.yaml"
    as_yaml.write_text(yaml.safe_dump_all(_objects()))
    for snap in (load_snapshot(str(as_json)), load_snapshot(as_yaml), load_snapshot(as_yaml.read_text())):
        assert [n.name for n in snap.nodes] == ["n1"]
        assert [p.key for p in snap.pods] == ["default/p"]
        assert list(snap.groups) == ["default/g"]


def test_typed_lists_and_nested_lists_are_flattened():
    snap = parse_snapshot(
        [{"kind": "NodeList", "items": [node("a"), node("b")]}, {"kind": "PodList", "items": [pod("p")]}]
    )
    assert [n.name for n in snap.nodes] == ["a", "b"]


def test_priority_class_resolves_group_priority_and_policy():
    snap = parse_snapshot(
        [
            priority_class("high", 1000, preemption_policy="Never"),
            priority_class("default", 7, global_default=True),
            podgroup("a", priority_class="high"),
            podgroup("b"),
            podgroup("c", priority=3, priority_class="high"),
        ]
    )
    assert snap.group_priority(snap.groups["default/a"]) == 1000
    assert snap.group_priority(snap.groups["default/b"]) == 7
    assert snap.group_priority(snap.groups["default/c"]) == 3
    assert snap.preemption_policy(snap.groups["default/a"]) == "Never"
    assert snap.preemption_policy(snap.groups["default/b"]) == "PreemptLowerPriority"


def test_annotation_preemption_policy_wins_over_spec():
    snap = parse_snapshot(
        [
            podgroup(
                "enforced",
                preemption_policy="Never",
                annotations={"gangweb.io/preemption-policy": "PreemptLowerPriority"},
            ),
            podgroup("plain", preemption_policy="Never"),
        ]
    )
    assert snap.preemption_policy(snap.groups["default/enforced"]) == "PreemptLowerPriority"
    assert snap.preemption_policy(snap.groups["default/plain"]) == "Never"


def test_group_priority_is_authoritative_for_its_pods_and_top_of_hierarchy_wins():
    snap = parse_snapshot(
        [
            podgroup("root", kind="CompositePodGroup", priority=50),
            podgroup("leaf", priority=10, parent="root"),
            pod("member", group="leaf", priority=1),
            pod("loner", priority=4),
        ]
    )
    assert snap.pod_priority[snap.pod_index["default/member"]] == 50
    assert snap.pod_priority[snap.pod_index["default/loner"]] == 4


def test_node_readiness_cordon_and_allocatable():
    snap = parse_snapshot(
        [
            node("ok"),
            node("down", ready=False),
            node("cordoned", cordoned=True),
            node("tiny", gpus=0, extra={"example.com/fpga": "2"}),
        ]
    )
    usable = dict(zip((n.name for n in snap.nodes), snap.node_usable.tolist()))
    assert usable == {"ok": True, "down": False, "cordoned": False, "tiny": True}
    tiny = snap.node_index["tiny"]
    assert snap.alloc[tiny, snap.resource_index["example.com/fpga"]] == 2
    assert snap.alloc[tiny, snap.resource_index["memory"]] == 512 * 2**30


def _bad(mutate):
    objects = _objects()
    mutate(objects)
    return objects


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda o: o.append("text"), "object #5"),
        (lambda o: o.append({"metadata": {"name": "x"}}), "kind: required"),
        (lambda o: o[0]["metadata"].pop("name"), "Node #1 (no metadata.name): metadata.name"),
        (lambda o: o[0]["status"]["allocatable"].update({"cpu": "lots"}), "Node n1: status.allocatable.cpu"),
        (
            lambda o: o[2]["spec"]["containers"][0]["resources"]["requests"].update({"memory": "1Qi"}),
            "Pod default/p: spec.containers[0].resources.requests.memory",
        ),
        (lambda o: o[2]["spec"].update({"containers": "nope"}), "Pod default/p: spec.containers"),
        (lambda o: o[2]["spec"].update({"priority": "high"}), "Pod default/p: spec.priority"),
        (
            lambda o: o[1]["spec"].update({"schedulingPolicy": {"gang": {}}}),
            "PodGroup default/g: spec.schedulingPolicy.gang.minCount",
        ),
        (
            lambda o: o[1]["spec"].update({"schedulingPolicy": {"gang": {"minCount": 0}}}),
            "minCount: must be >= 1",
        ),
        (
            lambda o: o[1]["spec"].update({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}}),
            "PodGroup default/g: spec.schedulingPolicy: exactly one",
        ),
        (
            lambda o: o[1]["spec"].update({"disruptionMode": {"sometimes": {}}}),
            "PodGroup default/g: spec.disruptionMode",
        ),
        (
            lambda o: o[1]["spec"].update({"preemptionPolicy": "Always"}),
            "PodGroup default/g: spec.preemptionPolicy",
        ),
        (
            lambda o: o[1]["metadata"].update({"annotations": {"gangweb.io/preemption-policy": "x"}}),
            "metadata.annotations[gangweb.io/preemption-policy]",
        ),
        (
            lambda o: o[1]["spec"].update({"schedulingConstraints": {"topology": [{}]}}),
            "spec.schedulingConstraints.topology[0].key",
        ),
        (
            lambda o: o[0]["spec"].update({"taints": [{"key": "k", "effect": "Sometimes"}]}),
            "Node n1: spec.taints[0].effect",
        ),
        (
            lambda o: o[2]["spec"].update({"tolerations": [{"key": "k", "operator": "Like"}]}),
            "Pod default/p: spec.tolerations[0].operator",
        ),
        (
            lambda o: o[2]["spec"].update(
                {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "a", "operator": "Near"}]}
                                ]
                            }
                        }
                    }
                }
            ),
            "Pod default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]",
        ),
        (lambda o: o[2]["status"].update({"startTime": "yesterday"}), "Pod default/p: status.startTime"),
        (lambda o: o[2]["metadata"].update({"labels": ["a"]}), "Pod default/p: metadata.labels"),
        (
            lambda o: o.append(
                {
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "b", "namespace": "default"},
                    "spec": {
                        "selector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}
                    },
                }
            ),
            "PodDisruptionBudget default/b: spec.selector.matchExpressions[0].operator",
        ),
        (
            lambda o: o.append(
                {
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "b", "namespace": "default"},
                    "status": {"disruptionsAllowed": -1},
                }
            ),
            "PodDisruptionBudget default/b: status.disruptionsAllowed",
        ),
        (
            lambda o: o.append({"kind": "PriorityClass", "metadata": {"name": "pc"}}),
            "PriorityClass pc: value: required",
        ),
        (lambda o: o.append(node("n1")), "Node n1: appears twice"),
        (
            lambda o: o.append(
                {
                    "kind": "Workload",
                    "metadata": {"name": "w", "namespace": "default"},
                    "spec": {"podGroupTemplates": [{"name": f"t{i}"} for i in range(9)]},
                }
            ),
            "Workload default/w: spec.podGroupTemplates: at most 8",
        ),
        (
            lambda o: o.append(
                {
                    "kind": "Workload",
                    "metadata": {"name": "w", "namespace": "default"},
                    "spec": {"podGroupTemplates": [{"schedulingPolicy": {}}]},
                }
            ),
            "Workload default/w: spec.podGroupTemplates[0].name",
        ),
    ],
)
def test_malformed_objects_name_object_and_field(mutate, expected):
    with pytest.raises(SnapshotError) as caught:
        parse_snapshot(_bad(mutate))
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "empty"),
        ("kind: [unclosed", "not valid YAML/JSON at line"),
        ('{"kind": "List", "items": 3}', "items: expected a list"),
    ],
)
def test_unreadable_text(text, expected):
    with pytest.raises(SnapshotError, match=expected):
        load_snapshot(text + "\n")


def test_missing_file():
    with pytest.raises(SnapshotError, match="not found"):
        load_snapshot("/nonexistent/snapshot.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # JSON arrays deeper than Python's recursion limit
        '{"a": ' * 100_000 + "1" + "}" * 100_000,  # ... and JSON objects
        "[" * 5_000 + "]" * 5_000 + "\n",  # YAML flow style
        "".join("  " * depth + "-\n" for depth in range(5_000)),  # YAML block style
    ],
)
def test_deeply_nested_text_is_a_snapshot_error_not_a_crash(text):
    with pytest.raises(SnapshotError, match=r"nest|not valid YAML/JSON") as caught:
        load_snapshot(text)
    assert "\n" not in str(caught.value)


def test_lists_nested_deeper_than_the_recursion_limit_are_flattened():
    nested: list = [node("deep")]
    for _ in range(5_000):
        nested = [nested]
    nested = {"kind": "List", "items": nested}
    assert [n.name for n in parse_snapshot([nested]).nodes] == ["deep"]


def _bare(obj):
    """An item as the API server puts it in a typed list: no kind, no apiVersion."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def test_typed_list_items_take_kind_and_api_version_from_the_list():
    snap = parse_snapshot(
        [
            {"apiVersion": "v1", "kind": "NodeList", "items": [_bare(node("a")), _bare(node("b"))]},
            {"apiVersion": "v1", "kind": "PodList", "items": [_bare(pod("p", group="g"))]},
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroupList",
                "items": [_bare(podgroup("g", min_count=1, priority=5))],
            },
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClassList",
                "items": [_bare(priority_class("hi", 9))],
            },
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudgetList",
                "items": [_bare(pdb("budget", match_labels={"app": "x"}, allowed=1))],
            },
            {
                "apiVersion": "scheduling.k8s.io/v1alpha3",
                "kind": "CompositePodGroupList",
                "items": [_bare(podgroup("top", kind="CompositePodGroup"))],
            },
        ]
    )
    assert [n.name for n in snap.nodes] == ["a", "b"]
    assert [p.key for p in snap.pods] == ["default/p"] and snap.pod_priority == [5]
    assert list(snap.groups) == ["default/g"] and list(snap.composites) == ["default/top"]
    assert list(snap.priority_classes) == ["hi"] and [b.key for b in snap.pdbs] == ["default/budget"]


def test_typed_list_items_are_validated_as_the_list_kind():
    workloads = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "WorkloadList",
        "items": [{"metadata": {"name": "w", "namespace": "default"}, "spec": {"podGroupTemplates": "bad"}}],
    }
    with pytest.raises(SnapshotError, match=r"Workload default/w: spec\.podGroupTemplates"):
        parse_snapshot([workloads])


def test_generic_list_items_still_need_a_kind():
    with pytest.raises(SnapshotError, match="object node-a1: kind: required"):
        parse_snapshot([as_list([_bare(node("node-a1"))])])


@pytest.mark.parametrize("separator", ["\n", "", " \n\t", "\r\n"])
def test_json_streams_are_multi_document_snapshots(separator):
    objects = _objects()
    text = (
        separator.join(json.dumps(obj) for obj in objects[:2]) + separator + json.dumps(as_list(objects[2:]))
    )
    snap = load_snapshot(text + "\n")
    assert [n.name for n in snap.nodes] == ["n1"] and [p.key for p in snap.pods] == ["default/p"]
    assert list(snap.groups) == ["default/g"]


def test_a_broken_document_in_a_json_stream_is_named_by_line():
    text = "\n".join(
        [json.dumps(node("a")), '{"kind": "Node" "metadata": {"name": "b"}}', json.dumps(node("c"))]
    )
    with pytest.raises(SnapshotError, match="not valid YAML/JSON at line 2, column 17: Expecting ','"):
        load_snapshot(text + "\n")


def test_pods_on_nodes_missing_from_a_snapshot_are_ignored_with_a_warning():
    objects = [
        node("n1", labels={"rack": "a"}),
        node("n2", labels={"rack": "b"}),
        podgroup("job", mode="all", priority=10),
        pod("job-0", node="n1", gpus=8, group="job"),
        pod("job-1", node="n2", gpus=8, group="job"),
    ]
    without_n2 = parse_snapshot([o for o in objects if o["metadata"]["name"] != "n2"])
    assert [len(u.pods) for u in without_n2.units.units] == [1]
    assert "bound to nodes missing from the snapshot" in without_n2.warnings[0]
    assert [len(u.pods) for u in parse_snapshot(objects).units.units] == [2]
