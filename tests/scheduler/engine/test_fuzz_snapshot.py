"""Whatever shape a field takes, parsing ends in a Snapshot or a one-line SnapshotError, and
planning on what parsed never crashes."""

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import POLICIES, SnapshotError, parse_snapshot, plan
from scheduler.engine.builders import node, pdb, pod, podgroup, priority_class

DELETE = object()
JUNK = st.one_of(
    st.just(DELETE),
    st.none(),
    st.booleans(),
    st.integers(-5, 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)


def _base():
    ported = {
        "containers": [
            {
                "name": "c",
                "ports": [{"containerPort": 1, "hostPort": 9000}],
                "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
            }
        ],
        "initContainers": [{"name": "i", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "nodeSelector": {"a": "b"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
                    ]
                }
            }
        },
        "overhead": {"cpu": "10m"},
    }
    return [
        node("n1", labels={"a": "b", "rack": "r"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
        node("n2", labels={"a": "b", "rack": "r"}),
        priority_class("pc", 5),
        podgroup("low", min_count=1, priority=1, mode="all", parent="root"),
        podgroup("root", kind="CompositePodGroup", mode="all", priority=1),
        pod("low-0", node="n2", gpus=8, group="low", labels={"app": "x"}),
        pdb("guard", match_labels={"app": "x"}, allowed=1),
        podgroup("hi", min_count=1, priority=100, priority_class="pc", topology="rack"),
        pod("hi-0", group="hi", gpus=8, spec=ported),
    ]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, prefix + (i,))


@settings(
    max_examples=int(__import__("os").environ.get("GANGWEB_PROPERTY_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data(), JUNK)
def test_any_field_any_junk(data, junk):
    objects = _base()
    target = data.draw(st.integers(0, len(objects) - 1))
    paths = [p for p in _paths(objects[target]) if p]
    path = data.draw(st.sampled_from(paths))
    mutated = copy.deepcopy(objects)
    holder = mutated[target]
    for key in path[:-1]:
        holder = holder[key]
    if junk is DELETE:
        del holder[path[-1]]
    else:
        holder[path[-1]] = junk
    try:
        snap = parse_snapshot(mutated)
    except SnapshotError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    for policy in POLICIES:
        try:
            plan(snap, "default/hi", policy).to_dict()
        except SnapshotError as exc:
            assert "\n" not in str(exc)
