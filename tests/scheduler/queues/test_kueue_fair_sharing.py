"""Kueue's dominant resource share, computed as Kueue computes it: the cases of Kueue's own
TestDominantResourceShare (kubernetes-sigs/kueue pkg/cache/scheduler/fair_sharing_test.go) as data.

Each case: ClusterQueues and Cohorts (name, parent, fair-sharing weight, quotas as
(flavor, resource, nominal, borrowingLimit, lendingLimit)), what ``cq`` uses (cpu in millicores, as Kueue
counts), the request of a workload added on top, and Kueue's expected (weightedShare, dominant resource,
borrowing) for every node.
"""

import pytest

from scheduler.queues.kueue import MAX_INT64, Node, Quota, accumulate, dominant_resource_share

GPU = "example.com/gpu"
CQ, COHORT = "ClusterQueue", "Cohort"


def _lender(cpu=None, gpu=None, weight=1.0, gpu_lending=None):
    quotas = []
    if cpu is not None:
        quotas.append(("default", "cpu", cpu, None, None))
    if gpu is not None:
        quotas.append(("default", GPU, gpu, None, gpu_lending))
    return ("lending-cq", CQ, "test-cohort", weight, quotas)


NOT_BORROWING = (0, None, False)
CASES = {
    "no cohort": dict(
        nodes=[
            (
                "cq",
                CQ,
                None,
                1.0,
                [("default", "cpu", 2_000_000, None, None), ("default", GPU, 5, None, None)],
            )
        ],
        usage={("default", "cpu"): 1_000, ("default", GPU): 2},
        want={"cq": NOT_BORROWING},
    ),
    "usage below nominal": dict(
        nodes=[
            (
                "cq",
                CQ,
                "test-cohort",
                1.0,
                [("default", "cpu", 2_000, None, None), ("default", GPU, 5, None, None)],
            ),
            _lender(cpu=8_000, gpu=5),
        ],
        usage={("default", "cpu"): 1_000, ("default", GPU): 2},
        want={"cq": NOT_BORROWING, "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "usage above nominal": dict(
        nodes=[
            (
                "cq",
                CQ,
                "test-cohort",
                1.0,
                [("default", "cpu", 2_000, None, None), ("default", GPU, 5, None, None)],
            ),
            _lender(cpu=8_000, gpu=5),
        ],
        usage={("default", "cpu"): 3_000, ("default", GPU): 7},
        want={"cq": (200, GPU, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "usage slightly above nominal in a cohort with large quotas": dict(
        nodes=[
            ("cq", CQ, "test-cohort", 1.0, [("default", GPU, 500, None, None)]),
            _lender(gpu=1000, weight=300),
        ],
        usage={("default", GPU): 501},
        want={"cq": (1, GPU, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "usage way above nominal in a cohort with large quotas and weights": dict(
        nodes=[
            ("cq", CQ, "test-cohort", 300.0, [("default", GPU, 500, None, None)]),
            _lender(gpu=1000, weight=300),
        ],
        usage={("default", GPU): 800},
        want={"cq": (1, GPU, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "one resource above nominal": dict(
        nodes=[
            (
                "cq",
                CQ,
                "test-cohort",
                1.0,
                [("default", "cpu", 2_000, None, None), ("default", GPU, 5, None, None)],
            ),
            _lender(cpu=8_000, gpu=5),
        ],
        usage={("default", "cpu"): 3_000, ("default", GPU): 3},
        want={"cq": (100, "cpu", True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "usage with workload above nominal": dict(
        nodes=[
            (
                "cq",
                CQ,
                "test-cohort",
                1.0,
                [("default", "cpu", 2_000, None, None), ("default", GPU, 5, None, None)],
            ),
            _lender(cpu=8_000, gpu=5),
        ],
        usage={("default", "cpu"): 1_000, ("default", GPU): 2},
        request={("default", "cpu"): 4_000, ("default", GPU): 4},
        want={"cq": (300, "cpu", True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "A resource with zero lendable": dict(
        nodes=[
            (
                "cq",
                CQ,
                "test-cohort",
                1.0,
                [("default", "cpu", 2_000, None, None), ("default", GPU, 2, None, 0)],
            ),
            _lender(cpu=8_000, gpu=64, gpu_lending=0),
        ],
        usage={("default", "cpu"): 1_000, ("default", GPU): 1},
        request={("default", "cpu"): 4_000, ("default", GPU): 4},
        want={"cq": (300, "cpu", True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "a zero-weight ClusterQueue borrowing only what nobody lends": dict(
        nodes=[
            ("cq", CQ, "test-cohort", 0.0, [("default", GPU, 2, None, 0)]),
            _lender(gpu=64, gpu_lending=0),
        ],
        usage={("default", GPU): 3},
        want={"cq": (MAX_INT64, None, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "multiple flavors": dict(
        nodes=[
            (
                "cq",
                CQ,
                "test-cohort",
                1.0,
                [("on-demand", "cpu", 20_000, None, None), ("spot", "cpu", 80_000, None, None)],
            ),
            ("lending-cq", CQ, "test-cohort", 1.0, [("default", "cpu", 100_000, None, None)]),
        ],
        usage={("on-demand", "cpu"): 15_000, ("spot", "cpu"): 5_000},
        request={("on-demand", "cpu"): 10_000},
        want={"cq": (25, "cpu", True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "above nominal with integer weight": dict(
        nodes=[("cq", CQ, "test-cohort", 2.0, [("default", GPU, 5, None, None)]), _lender(gpu=5)],
        usage={("default", GPU): 7},
        want={"cq": (100, GPU, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "above nominal with decimal weight": dict(
        nodes=[("cq", CQ, "test-cohort", 0.5, [("default", GPU, 5, None, None)]), _lender(gpu=5)],
        usage={("default", GPU): 7},
        want={"cq": (400, GPU, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "above nominal with zero weight": dict(
        nodes=[("cq", CQ, "test-cohort", 0.0, [("default", GPU, 5, None, None)]), _lender(gpu=10)],
        usage={("default", GPU): 7},
        want={"cq": (MAX_INT64, GPU, True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
    "cohort has resource share": dict(
        nodes=[
            ("cq", CQ, "child-cohort", 1.0, [("default", GPU, 5, None, None)]),
            ("child-cohort", COHORT, "root", 2.0, []),
            ("root", COHORT, None, 1.0, [("default", GPU, 45, None, None)]),
        ],
        usage={("default", GPU): 10},
        want={"cq": (100, GPU, True), "child-cohort": (50, GPU, True), "root": NOT_BORROWING},
    ),
    "resource share defined for resources only available at the root cohort": dict(
        nodes=[
            ("cq", CQ, "child-cohort", 1.0, [("default", GPU, 0, None, None)]),
            ("child-cohort", COHORT, "root", 2.0, []),
            ("root", COHORT, None, 1.0, [("default", GPU, 50, None, None)]),
        ],
        usage={("default", GPU): 10},
        want={"cq": (200, GPU, True), "child-cohort": (100, GPU, True), "root": NOT_BORROWING},
    ),
    "resource share affected by borrowing limit": dict(
        nodes=[
            ("cq", CQ, "child-cohort", 1.0, [("default", GPU, 0, None, None)]),
            ("child-cohort", COHORT, "root", 1.0, [("default", GPU, 0, 10, None)]),
            ("root", COHORT, None, 1.0, [("default", GPU, 50, None, None)]),
        ],
        usage={("default", GPU): 10},
        want={"cq": (1000, GPU, True), "child-cohort": (200, GPU, True), "root": NOT_BORROWING},
    ),
    "borrowing against unlimited lendable capacity (exabyte-scale quota)": dict(
        nodes=[("cq", CQ, "test-cohort", 1.0, [("default", "cpu", 0, None, None)]), _lender(cpu=MAX_INT64)],
        usage={("default", "cpu"): 1_000},
        want={"cq": (1, "cpu", True), "lending-cq": NOT_BORROWING, "test-cohort": NOT_BORROWING},
    ),
}


def _tree(rows, usage):
    nodes = {}
    for name, kind, _, weight, quotas in rows:
        node = Node(name, kind, weight=weight)
        for flavor, resource, nominal, borrowing, lending in quotas:
            node.quotas[(flavor, resource)] = Quota(nominal, borrowing, lending)
        nodes[name] = node
    for name, _, parent, _, _ in rows:
        if parent is not None:
            if parent not in nodes:  # a cohort only its members name
                nodes[parent] = Node(parent, COHORT)
            nodes[name].parent = nodes[parent]
            nodes[parent].children.append(nodes[name])
    nodes["cq"].usage = dict(usage)
    for node in nodes.values():
        if node.parent is None:
            accumulate(node)
    return nodes


@pytest.mark.parametrize("case", list(CASES))
def test_dominant_resource_share_equals_kueues(case):
    spec = CASES[case]
    nodes = _tree(spec["nodes"], spec["usage"])
    got = {}
    for name, node in nodes.items():
        drs = dominant_resource_share(node, spec.get("request"))  # as Kueue's test does, for every node
        got[name] = (drs.weighted_share, drs.dominant_resource, drs.borrowing)
    assert got == spec["want"]
