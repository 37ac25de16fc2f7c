"""Plans as users see them: victims, evictions, placement, reason, for each policy."""

import pytest

from scheduler.engine import POLICIES, SnapshotError, parse_snapshot, plan
from scheduler.engine.allowance import Allowance
from scheduler.engine.builders import node, pdb, pod, podgroup
from scheduler.engine.dra import builders as dra
from testkit.synthetic import preemptor_name

ATOMIC = ("kep5710", "gangweb")


def _preemptor(count=1, gpus=8, priority=100, **group):
    return [podgroup("hi", min_count=count, priority=priority, **group)] + [
        pod(f"hi-{i}", group="hi", gpus=gpus, priority=priority) for i in range(count)
    ]


def _names(result):
    return [v.name for v in result.victims]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_no_preemption_when_the_gang_already_fits(policy):
    snap = parse_snapshot([node("a"), node("b"), pod("low", node="a", gpus=8, priority=1)] + _preemptor())
    result = plan(snap, "default/hi", policy)
    assert result.feasible and result.victims == [] and result.placement == {"default/hi-0": "b"}
    assert "without preemption" in result.reason


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_min_count_met_without_preemption_means_no_preemption(policy):
    snap = parse_snapshot(
        [node("a"), node("b"), pod("low", node="a", gpus=8, priority=1)]
        + [podgroup("hi", min_count=1, priority=100)]
        + [pod(f"hi-{i}", group="hi", gpus=8) for i in range(2)]
    )
    result = plan(snap, "default/hi", policy)
    assert result.feasible and result.victims == [] and len(result.placement) == 1
    assert "minCount 1" in result.reason


@pytest.mark.parametrize("policy", ATOMIC)
def test_all_group_is_evicted_whole_including_pods_elsewhere(policy):
    snap = parse_snapshot(
        [
            node("a"),
            node("b"),
            node("c"),
            podgroup("low", min_count=2, priority=10, mode="all"),
            pod("low-0", node="a", gpus=8, group="low"),
            pod("low-1", node="b", gpus=8, group="low"),
            pod("other", node="c", gpus=8, priority=500),
        ]
        + _preemptor()
    )
    result = plan(snap, "default/hi", policy)
    assert result.to_dict()["victims"] == [
        {
            "kind": "PodGroup",
            "namespace": "default",
            "name": "low",
            "priority": 10,
            "pods": ["default/low-0", "default/low-1"],
            "lostGpuSeconds": 0.0,  # every pod started at the snapshot's now
        }
    ]
    assert result.to_dict()["evictions"] == ["default/low-0", "default/low-1"]
    assert result.evicted_gpus == 16


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_only_strictly_lower_priority_is_preempted(policy):
    snap = parse_snapshot([node("a"), pod("peer", node="a", gpus=8, priority=100)] + _preemptor())
    result = plan(snap, "default/hi", policy)
    assert not result.feasible and result.to_dict()["victims"] == [] and result.to_dict()["evictions"] == []
    assert "no preemption victims" in result.reason


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_preemption_policy_never_and_the_gangweb_annotation(policy):
    objects = [node("a"), pod("low", node="a", gpus=8, priority=1)]
    never = parse_snapshot(objects + _preemptor(preemption_policy="Never"))
    result = plan(never, "default/hi", policy)
    assert not result.feasible and "preemptionPolicy=Never" in result.reason
    enforced = parse_snapshot(
        objects
        + _preemptor(
            preemption_policy="Never", annotations={"gangweb.io/preemption-policy": "PreemptLowerPriority"}
        )
    )
    assert plan(enforced, "default/hi", policy).evictions == ["default/low"]
    kept = parse_snapshot(objects + _preemptor(annotations={"gangweb.io/preemption-policy": "Never"}))
    assert not plan(kept, "default/hi", policy).feasible


def test_kep5710_fixed_placement_evicts_the_dearer_gang_gangweb_does_not():
    # After removing every candidate both nodes look alike, so kube-scheduler's placement takes the
    # first one (a) and is stuck with its priority-50 gang; gangweb takes b and its priority-10 gang.
    snap = parse_snapshot(
        [
            node("a"),
            node("b"),
            podgroup("dear", min_count=1, priority=50, mode="all"),
            pod("dear-0", node="a", gpus=8, group="dear"),
            podgroup("cheap", min_count=1, priority=10, mode="all"),
            pod("cheap-0", node="b", gpus=8, group="cheap"),
        ]
        + _preemptor()
    )
    kep = plan(snap, "default/hi", "kep5710")
    ours = plan(snap, "default/hi", "gangweb")
    assert _names(kep) == ["dear"] and kep.placement == {"default/hi-0": "a"}
    assert _names(ours) == ["cheap"] and ours.placement == {"default/hi-0": "b"}
    assert ours.cost < kep.cost
    assert "kep5710 would evict" in ours.reason


def test_reprieval_keeps_the_more_important_victim():
    snap = parse_snapshot(
        [
            node("a"),
            pod("old", node="a", gpus=4, priority=10, start="2026-06-01T00:00:00Z"),
            pod("new", node="a", gpus=4, priority=10, start="2026-06-20T00:00:00Z"),
        ]
        + _preemptor(gpus=4)
    )
    for policy in ATOMIC:
        assert plan(snap, "default/hi", policy).evictions == ["default/new"]


def test_pdb_violators_are_reprieved_first():
    snap = parse_snapshot(
        [
            node("a"),
            pod("old", node="a", gpus=4, priority=10, start="2026-06-01T00:00:00Z"),
            pod("new", node="a", gpus=4, priority=10, start="2026-06-20T00:00:00Z", labels={"app": "db"}),
            pdb("db", match_labels={"app": "db"}, allowed=0),
        ]
        + _preemptor(gpus=4)
    )
    for policy in ATOMIC:
        result = plan(snap, "default/hi", policy)
        assert result.evictions == ["default/old"] and result.pdb_violations == 0


def test_pdb_violation_is_accepted_when_unavoidable_and_reported():
    snap = parse_snapshot(
        [
            node("a"),
            pod("db-0", node="a", gpus=8, priority=10, labels={"app": "db"}),
            pdb("db", match_labels={"app": "db"}, allowed=0),
        ]
        + _preemptor()
    )
    result = plan(snap, "default/hi", "gangweb")
    assert result.evictions == ["default/db-0"] and result.cost[0] == 1
    assert "PodDisruptionBudget" in result.reason


def test_pod_in_a_single_group_outranks_a_bare_pod_of_equal_priority():
    snap = parse_snapshot(
        [
            node("a"),
            podgroup("svc", priority=10, mode="single"),
            pod("grouped", node="a", gpus=4, group="svc", start="2026-06-20T00:00:00Z"),
            pod("bare", node="a", gpus=4, priority=10, start="2026-06-01T00:00:00Z"),
        ]
        + _preemptor(gpus=4)
    )
    assert plan(snap, "default/hi", "kep5710").evictions == ["default/bare"]


def test_composite_all_root_is_one_victim():
    snap = parse_snapshot(
        [
            node("a"),
            node("b"),
            podgroup("job", kind="CompositePodGroup", priority=10, mode="all"),
            podgroup("leader", priority=10, parent="job"),
            podgroup("workers", priority=10, parent="job"),
            pod("leader-0", node="a", gpus=2, group="leader"),
            pod("worker-0", node="b", gpus=8, group="workers"),
        ]
        + _preemptor()
    )
    result = plan(snap, "default/hi", "kep5710")
    assert result.to_dict()["victims"] == [
        {
            "kind": "CompositePodGroup",
            "namespace": "default",
            "name": "job",
            "priority": 10,
            "pods": ["default/leader-0", "default/worker-0"],
            "lostGpuSeconds": 0.0,  # every pod started at the snapshot's now
        }
    ]


def test_gang_needs_min_count_and_basic_needs_one():
    objects = [
        node("a"),
        pod("keeper", node="a", gpus=4, priority=1000),
        pod("low", node="a", gpus=4, priority=1),
    ]
    gang = parse_snapshot(
        objects
        + [podgroup("hi", min_count=2, priority=100)]
        + [pod(f"hi-{i}", group="hi", gpus=4) for i in range(2)]
    )
    result = plan(gang, "default/hi", "gangweb")
    assert not result.feasible and "minCount 2" in result.reason and result.to_dict()["evictions"] == []
    basic = parse_snapshot(
        objects + [podgroup("hi", priority=100)] + [pod(f"hi-{i}", group="hi", gpus=4) for i in range(2)]
    )
    result = plan(basic, "default/hi", "gangweb")
    assert result.feasible and result.evictions == ["default/low"] and len(result.placement) == 1


def test_priority_mismatch_fails_the_group():
    snap = parse_snapshot(
        [node("a"), podgroup("hi", min_count=1, priority=100), pod("hi-0", group="hi", priority=7)]
    )
    result = plan(snap, "default/hi")
    assert (
        not result.feasible and "should match the priority of the pod group, got: 100 and 7" in result.reason
    )


def test_inter_pod_affinity_is_ignored_and_said_so():
    affinity = {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    }
    snap = parse_snapshot(
        [node("a"), podgroup("hi", min_count=1, priority=100), pod("hi-0", group="hi", gpus=8, spec=affinity)]
    )
    assert "inter-pod affinity" in plan(snap, "default/hi").reason


def test_legacy_leaves_gangs_partly_evicted():
    snap = parse_snapshot(
        [
            node("a"),
            node("b"),
            podgroup("low", min_count=2, priority=10, mode="all"),
            pod("low-0", node="a", gpus=8, group="low"),
            pod("low-1", node="b", gpus=4, group="low"),
            pod("bare", node="b", gpus=4, priority=20),
        ]
        + _preemptor()
    )
    legacy = plan(snap, "default/hi", "legacy")
    assert legacy.evictions == ["default/low-0"]
    assert legacy.stats["partly_evicted_gangs"] == 1 and legacy.stats["idle_gpus"] == 4
    atomic = plan(snap, "default/hi", "kep5710")
    assert atomic.evictions == ["default/low-0", "default/low-1"]


def test_infeasible_everything_removed_still_short():
    snap = parse_snapshot([node("a", gpus=4), pod("low", node="a", gpus=4, priority=1)] + _preemptor())
    for policy in sorted(POLICIES):
        result = plan(snap, "default/hi", policy)
        assert (
            not result.feasible and result.to_dict()["victims"] == [] and result.to_dict()["placement"] == {}
        )


def test_unknown_group_and_policy_are_errors():
    snap = parse_snapshot([node("a")] + _preemptor())
    with pytest.raises(SnapshotError, match="PodGroup default/nope not found"):
        plan(snap, "default/nope")
    with pytest.raises(SnapshotError, match="unknown policy"):
        plan(snap, "default/hi", "fastest")
    with pytest.raises(ValueError, match="NAMESPACE/NAME"):
        plan(snap, "hi")


def test_to_dict_has_exactly_the_contract_keys_then_the_outcome_and_optimality():
    snap = parse_snapshot([node("a"), pod("low", node="a", gpus=8, priority=1)] + _preemptor())
    data = plan(snap, "default/hi").to_dict()
    assert list(data) == [
        "podGroup",
        "policy",
        "feasible",
        "victims",
        "evictions",
        "placement",
        "domain",
        "reason",
        "outcome",
        "optimality",
    ]
    assert data["outcome"] == "preempt" == plan(snap, "default/hi").details()["outcome"]
    assert data["optimality"] == "proven" == plan(snap, "default/hi").details()["optimality"]
    assert data["podGroup"] == "default/hi" and data["policy"] == "gangweb" and data["domain"] is None


def test_reprieve_filter_seam_can_veto_and_observe_reprieval():
    from scheduler.engine.evaluation import Problem
    from scheduler.engine.policies.kep5710 import Kep5710Policy
    from scheduler.engine.preemptor import Preemptor

    seen = []

    class KeepNothingBare:
        def should_attempt(self, unit):
            return unit.kind != "Pod" or unit.name != "old"

        def on_reprieved(self, unit):
            seen.append(unit.name)

    snap = parse_snapshot(
        [
            node("a"),
            pod("old", node="a", gpus=4, priority=10, start="2026-06-01T00:00:00Z"),
            pod("new", node="a", gpus=4, priority=10, start="2026-06-20T00:00:00Z"),
        ]
        + _preemptor(gpus=4)
    )
    policy = Kep5710Policy()
    policy.reprieve_filter_factory = KeepNothingBare
    result = policy.plan(Problem(snap, Preemptor(snap, "default/hi")))
    assert result.evictions == ["default/old"] and seen == ["new"]


def test_details_carry_what_the_contract_leaves_out():
    snap = parse_snapshot(
        [
            node("a"),
            pod("low", node="a", gpus=8, priority=1, start="2026-06-30T00:00:00Z"),
            pod("clock", node="a", gpus=0, priority=1000, start="2026-07-01T00:00:00Z"),
        ]
        + _preemptor()
    )
    details = plan(snap, "default/hi").details()
    assert details["cost"]["victim_units"] == 1 and details["cost"]["highest_victim_priority"] == 1
    assert details["evictedGpus"] == 8 and details["lostGpuSeconds"] == 8 * 86400
    assert details["victims"] == [
        {
            "kind": "Pod",
            "namespace": "default",
            "name": "low",
            "priority": 1,
            "priorityClass": None,
            "pods": 1,
            "gpus": 8,
            "runningSeconds": 86400,
            "lostGpuSeconds": 8 * 86400,
            "pdbViolations": 0,
        }
    ]
    assert details["placedPods"] == details["pendingPods"] == 1
    assert details["preemptorPriority"] == 100


def test_the_cheapest_plans_not_chosen_are_kept_with_their_cost():
    """An operator compares the choice with what else was possible: one plan per other rack."""
    snap = parse_snapshot(
        [
            node("a", labels={"rack": "r1"}),
            node("b", labels={"rack": "r2"}),
            pod("cheap", node="a", gpus=8, priority=1, start="2026-06-30T12:00:00Z"),
            pod("dear", node="b", gpus=8, priority=1, start="2026-06-30T00:00:00Z"),
            pod("clock", node="a", gpus=0, priority=1000, start="2026-07-01T00:00:00Z"),
        ]
        + _preemptor(topology="rack")
    )
    result = plan(snap, "default/hi")
    assert [v.name for v in result.victims] == ["cheap"]
    assert result.stats["alternatives"] == [
        {
            "domain": "r2",
            "topologyKey": "rack",
            "how": result.stats["alternatives"][0]["how"],
            "placedPods": 1,
            "victimUnits": 1,
            "evictedPods": 1,
            "highestVictimPriority": 1,
            "pdbViolations": 0,
            "lostGpuSeconds": 8 * 86400,
        }
    ]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_no_schedulable_node_is_the_reason_not_a_lack_of_victims(policy):
    snap = parse_snapshot([node("down", ready=False), node("drained", cordoned=True)] + _preemptor())
    result = plan(snap, "default/hi", policy)
    assert not result.feasible and result.victims == []
    assert "0/2 nodes are available" in result.reason, result.reason
    assert "1 node(s) were not ready" in result.reason and "1 node(s) were unschedulable" in result.reason
    assert "victim" not in result.reason


@pytest.mark.parametrize("topology", [None, "rack"])
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_snapshot_without_nodes_says_so(policy, topology):
    result = plan(parse_snapshot(_preemptor(topology=topology)), "default/hi", policy)
    assert not result.feasible and "the snapshot has no nodes" in result.reason, result.reason
    assert "victim" not in result.reason


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_filters_that_exclude_every_node_are_counted_even_when_victims_exist(policy):
    tainted = node("tainted", taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
    snap = parse_snapshot(
        [
            tainted,
            node("cpu-only", labels={"pool": "cpu"}),
            node("gpu", labels={"pool": "gpu"}),
            pod("low-0", node="tainted", gpus=8, priority=1),
            pod("low-1", node="gpu", gpus=8, priority=1),
        ]
        + [
            podgroup("hi", min_count=1, priority=100),
            pod("hi-0", group="hi", gpus=8, spec={"nodeSelector": {"pool": "tpu"}}),
        ]
    )
    result = plan(snap, "default/hi", policy)
    assert not result.feasible and result.victims == []
    assert "0/3 nodes are available" in result.reason, result.reason
    assert "1 node(s) had untolerated taint(s)" in result.reason
    assert "2 node(s) didn't match the pod's node selector or required node affinity" in result.reason


def _two_racks_each_with_one_free_node():
    racks = [node(f"{rack}{i}", labels={"rack": rack}) for rack in ("a", "b") for i in (1, 2)]
    return parse_snapshot(
        racks
        + [pod("low-a", node="a2", gpus=8, priority=1), pod("low-b", node="b2", gpus=8, priority=2)]
        + _preemptor(count=2, topology="rack")
    )


def test_legacy_keeps_the_gang_in_one_topology_domain_and_reports_it():
    snap = _two_racks_each_with_one_free_node()
    result = plan(snap, "default/hi", "legacy")
    racks = {snap.nodes[snap.node_index[name]].labels["rack"] for name in result.placement.values()}
    assert result.feasible and len(result.placement) == 2 and racks == {result.domain}, result
    assert result.domain == "a" and result.evictions == ["default/low-a"]
    assert "rack=a" in result.reason


def test_legacy_with_running_pods_stays_in_their_domain():
    snap = parse_snapshot(
        [node(f"{rack}{i}", labels={"rack": rack}) for rack in ("a", "b") for i in (1, 2)]
        + [pod("low-a", node="a2", gpus=8, priority=1), pod("low-b", node="b2", gpus=8, priority=1)]
        + _preemptor(count=2, topology="rack")[:-1]
        + [pod("hi-1", group="hi", node="b1", gpus=8, priority=100)]
    )
    result = plan(snap, "default/hi", "legacy")
    assert result.feasible and result.domain == "b" and result.placement == {"default/hi-0": "b2"}
    assert result.evictions == ["default/low-b"]


def test_gangweb_keeps_walking_domains_while_its_best_plan_breaks_a_budget():
    """Domain ranking cannot see PDB budgets: on this cluster the first eight domains all break one,
    and the first plan that breaks none sits in the 22nd (found by planning every domain alone)."""
    from tests.scheduler.engine.entangled import entangled_cluster

    snap = parse_snapshot(entangled_cluster(1024, 8))
    result = plan(snap, preemptor_name(64), "gangweb")
    assert result.feasible and result.victims
    assert result.cost_breakdown["pdb_violations"] == 0, result.reason


def test_the_registry_order_is_the_benchmarks_and_the_quality_study_grades_atomic_policies():
    from bench.engine_timing import POLICY_ORDER

    # The registry's order is the benchmark's; the quality study grades the policies that evict whole units.
    assert POLICY_ORDER == tuple(POLICIES) == ("kep5710", "gangweb", "legacy")
    assert [name for name, policy in POLICIES.items() if policy.atomic] == ["kep5710", "gangweb"]


def _invalid(objects, message):
    """``objects`` with their PodGroup marked Invalid by kube-scheduler, as kubernetes/kubernetes#140670 writes it."""
    condition = {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Invalid",
        "message": message,
    }
    return [
        {**o, "status": {**(o.get("status") or {}), "conditions": [condition]}}
        if o["kind"] == "PodGroup"
        else o
        for o in objects
    ]


def test_a_group_kube_scheduler_found_invalid_is_never_a_reason_to_evict():
    """Feature-detected: the reason exists after 1.37; where it is absent (1.37) nothing changes, and an
    Unschedulable condition (1.37's own) is no reason to refuse."""
    objects = [node("a"), pod("low", node="a", gpus=8, priority=1)] + _preemptor()
    for policy in sorted(POLICIES):
        invalid = plan(parse_snapshot(_invalid(objects, "priority conflict")), "default/hi", policy)
        assert invalid.outcome == "infeasible:invalid-group" and invalid.victims == [], policy
        assert "priority conflict" in invalid.reason
        assert plan(parse_snapshot(objects), "default/hi", policy).outcome == "preempt"
        unschedulable = [
            {
                **o,
                "status": {
                    "conditions": [
                        {
                            "type": "PodGroupInitiallyScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/1 nodes",
                        }
                    ]
                },
            }
            if o["kind"] == "PodGroup"
            else o
            for o in objects
        ]
        assert plan(parse_snapshot(unschedulable), "default/hi", policy).outcome == "preempt"


OUTCOMES = {
    "fits": [node("a"), node("b"), pod("low", node="a", gpus=8, priority=1)] + _preemptor(),
    "preempt": [node("a"), pod("low", node="a", gpus=8, priority=1)] + _preemptor(),
    "infeasible:too-few-pods": [
        node("a"),
        podgroup("hi", min_count=2, priority=100),
        pod("hi-0", group="hi", node="a", gpus=8, priority=100),
    ],
    # kube-scheduler marked the group Invalid at run time (the PodGroupInitiallyScheduled condition): the one
    # low pod could make room, yet no eviction would get an invalid group placed.
    "infeasible:invalid-group": [node("a"), pod("low", node="a", gpus=8, priority=1)]
    + _invalid(_preemptor(), "conflicting scheduler names"),
    "infeasible:priority-mismatch": [
        node("a"),
        podgroup("hi", min_count=1, priority=100),
        pod("hi-0", group="hi", priority=7),
    ],
    "infeasible:device-claim": [
        node("a", gpus=0),
        dra.device_class(),
        dra.resource_slice("a", 2),
        dra.claim_template("eight", requests=[dra.exact_request(count=8)]),
        dra.with_claims(
            podgroup("hi", min_count=1, priority=100), [{"name": "g", "resourceClaimTemplateName": "eight"}]
        ),
        dra.with_claims(
            pod("hi-0", group="hi", priority=100), [{"name": "g", "resourceClaimTemplateName": "eight"}]
        ),
    ],
    "infeasible:no-usable-node": [node("down", ready=False)] + _preemptor(),
    "infeasible:topology": [node("a"), pod("low", node="a", gpus=8, priority=1)]
    + _preemptor(topology="rack"),
    "infeasible:never-preempts": [node("a"), pod("low", node="a", gpus=8, priority=1)]
    + _preemptor(preemption_policy="Never"),
    "infeasible:no-victims": [node("a"), pod("peer", node="a", gpus=8, priority=100)] + _preemptor(),
    "infeasible:no-room": [node("a", gpus=4), pod("low", node="a", gpus=4, priority=1)] + _preemptor(),
    # The only victim ran an hour without a checkpoint, and its namespace has no lost work left this hour.
    "infeasible:lost-work-budget": [
        node("a"),
        node("b", gpus=0),
        pod("low", node="a", gpus=8, priority=1),
        pod("clock", node="b", start="2026-07-01T01:00:00Z"),
    ]
    + _preemptor(),
}
# What the snapshot of a case is planned under, beside its objects.
BUDGETS = {"infeasible:lost-work-budget": Allowance(namespaces={"default": 0.0})}


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("outcome", OUTCOMES)
def test_every_plan_carries_its_outcome_code_beside_its_sentence(policy, outcome):
    from scheduler.engine.outcomes import BESIDE_ENGINE, Outcome

    snapshot = parse_snapshot(OUTCOMES[outcome]).with_lost_work(allowance=BUDGETS.get(outcome))
    result = plan(snapshot, "default/hi", policy)
    assert result.outcome is Outcome(outcome)
    assert result.outcome == outcome == result.to_dict()["outcome"] == result.details()["outcome"]
    # The JSON and the ledger get the plain string: any encoder (YAML's too) writes the same bytes.
    assert type(result.to_dict()["outcome"]) is str and type(result.details()["outcome"]) is str
    assert result.feasible == result.outcome.feasible == (not outcome.startswith("infeasible:"))
    # Every code the engine gives has a case here; the others are given beside it.
    assert set(OUTCOMES) == {code.value for code in Outcome if code not in BESIDE_ENGINE}


def test_an_infeasible_plan_without_a_why_is_an_engine_bug():
    from scheduler.engine.evaluation import Problem
    from scheduler.engine.outcomes import Outcome
    from scheduler.engine.preemptor import Preemptor

    snap = parse_snapshot([node("a")] + _preemptor())
    with pytest.raises(ValueError, match="needs one of"):
        Problem(snap, Preemptor(snap, "default/hi")).plan("gangweb", False, "no reason given")
    for why in ("no-room", "infeasible:no-room", Outcome.UNKNOWN, Outcome.FITS):
        with pytest.raises(ValueError, match="needs one of"):
            Problem(snap, Preemptor(snap, "default/hi")).plan("gangweb", False, "no reason given", why=why)


def test_an_infeasible_plan_says_why_in_words_not_label_syntax():
    """Issue 31 item 5: no "only 0 of 4 pending pods fit in any one topology.gangweb.io/rack value"."""
    key = "topology.gangweb.io/rack"
    snap = parse_snapshot(
        [
            node("a", labels={key: "r1"}),
            node("b", labels={key: "r2"}),
            pod("low", node="a", gpus=8, priority=1),
        ]
        + _preemptor(count=4, topology=key)
    )
    reason = plan(snap, "default/hi").reason
    assert reason == (
        "not enough room even if the one lower-priority gang or pod were evicted: none of its 4 waiting pods "
        f"would fit in any one rack (label {key}), and it needs 4 together (minCount 4)"
    ), reason
