"""Σ lent = Σ borrowed per cohort (or parent) and resource, on random Kueue cohorts and KAI/YuniKorn trees:
what members borrow is what their siblings lend, plus what the group's own pool lent, plus what the
group itself borrowed from above; with neither pool nor parent, Σ lent = Σ borrowed exactly."""

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine.builders import node, pod
from scheduler.queues.lending import share_out

from .conftest import model_of

KUEUE = "kueue.x-k8s.io/v1beta2"


def _cq(name, cohort, nominal, borrowing, lending):
    resource = {"name": "nvidia.com/gpu", "nominalQuota": str(nominal)}
    if borrowing is not None:
        resource["borrowingLimit"] = str(borrowing)
    if lending is not None:
        resource["lendingLimit"] = str(min(lending, nominal))
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": cohort,
            "resourceGroups": [
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "f", "resources": [resource]}]}
            ],
        },
    }


def _workload(name, cq, gpus):
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}]},
        "status": {
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"nvidia.com/gpu": "f"},
                        "resourceUsage": {"nvidia.com/gpu": str(gpus)},
                    }
                ],
            },
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
        },
    }


cluster_queues = st.lists(
    st.tuples(
        st.integers(0, 40),  # nominal
        st.one_of(st.none(), st.integers(0, 30)),  # borrowing limit
        st.one_of(st.none(), st.integers(0, 40)),  # lending limit
        st.integers(0, 60),  # usage
        st.sampled_from(["left", "right"]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_queues, st.integers(0, 20), st.booleans())
def test_kueue_lent_equals_borrowed_per_cohort(rows, pool, nested):
    objects = [node("n1")]
    if nested:  # two child cohorts under one root, the root holding a quota of its own
        for child in ("left", "right"):
            objects.append(
                {
                    "apiVersion": KUEUE,
                    "kind": "Cohort",
                    "metadata": {"name": child},
                    "spec": {"parentName": "root"},
                }
            )
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "Cohort",
                "metadata": {"name": "root"},
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["nvidia.com/gpu"],
                            "flavors": [
                                {
                                    "name": "f",
                                    "resources": [{"name": "nvidia.com/gpu", "nominalQuota": str(pool)}],
                                }
                            ],
                        }
                    ]
                },
            }
        )
    for i, (nominal, borrowing, lending, usage, side) in enumerate(rows):
        cohort = side if nested else "flat"
        objects.append(_cq(f"cq-{i}", cohort, nominal, borrowing, lending))
        if usage:
            objects.append(_workload(f"w-{i}", f"cq-{i}", usage))
    model = model_of(objects)
    cohorts = ("left", "right", "root") if nested else ("flat",)
    for cohort in cohorts:
        totals = model.pools.get(("kueue", cohort), {}).get("gpu")
        members = [q for q in model.queues if q.parent == cohort]
        if not members:
            continue
        borrowed = sum((Fraction(q.figures("gpu").borrowed) for q in members), Fraction(0))
        lent = sum((Fraction(q.figures("gpu").lent) for q in members), Fraction(0))
        assert totals is not None
        assert borrowed == totals["borrowed"] == lent + totals["pool"] + totals["fromAbove"]
        if not nested:  # no cohort quota: what is borrowed is lent by the siblings (or overadmitted)
            assert totals["pool"] == 0


@given(
    st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 50), min_size=1),
    st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 50), min_size=1),
    st.integers(0, 50),
)
def test_share_out_balances(borrowed, unused, pool):
    lending = share_out(borrowed, unused, pool)
    assert sum(lending.lent.values()) + lending.pool + lending.from_above == sum(borrowed.values())
    assert all(0 <= lending.lent[m] <= unused[m] for m in unused)
    assert lending.from_above >= 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 16), st.integers(0, 4)), min_size=2, max_size=5))
def test_kai_lent_equals_borrowed_under_each_parent(rows):
    objects = [node(f"n{i}") for i in range(4)]
    objects.append(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "dept"},
            "spec": {"resources": {"gpu": {"quota": 32, "limit": -1, "overQuotaWeight": 1}}},
        }
    )
    for i, (quota, pods) in enumerate(rows):
        name = f"q{i}"
        objects.append(
            {
                "apiVersion": "scheduling.run.ai/v2",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {
                    "parentQueue": "dept",
                    "resources": {"gpu": {"quota": quota, "limit": -1, "overQuotaWeight": 1}},
                },
            }
        )
        for p in range(pods):
            objects.append(pod(f"{name}-{p}", node=f"n{p % 4}", gpus=2, labels={"kai.scheduler/queue": name}))
    model = model_of(objects)
    members = [q for q in model.queues if q.parent == "dept"]
    totals = model.pools[("kai", "dept")]["gpu"]
    borrowed = sum((Fraction(q.figures("gpu").borrowed) for q in members), Fraction(0))
    lent = sum((Fraction(q.figures("gpu").lent) for q in members), Fraction(0))
    assert borrowed == lent + totals["pool"] + totals["fromAbove"]
