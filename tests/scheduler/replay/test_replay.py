"""Replays with known outcomes: a hand-checkable scenario, then seeded replays of the synthesized trace."""

from __future__ import annotations

import json

import pytest

from scheduler.replay.report import ReplayConfig, policy_report, run_replay, without_timing
from scheduler.replay.sim import BROKEN_RESTART_SECONDS, CYCLE_SECONDS, Replay
from scheduler.replay.trace import default_trace_dir
from scheduler.replay.workload import JobSpec, Node, Workload
from tests.scheduler.replay.conftest import FIXTURE

CHECKPOINT = 600.0


def _gang(name: str, priority: int, size: int, pod_gpus: int, arrival: float, work: float) -> JobSpec:
    return JobSpec(
        name=name,
        namespace="train",
        kind="gang",
        tier="low" if priority < 400 else "high",
        priority=priority,
        size=size,
        min_count=size,
        pod_gpus=pod_gpus,
        pod_cpu_milli=1000,
        pod_memory_mib=1024,
        disruption="all",
        topology=False,
        arrival=arrival,
        work=work,
    )


def _one_node_scenario() -> Workload:
    """One 8-GPU node. A low-priority `all` gang of 2 x 4 GPUs fills it; 1,000 s later a high-priority
    1-pod gang asks for 4 GPUs. Per-pod preemption evicts one of the two pods and leaves the gang
    broken; an atomic policy evicts the whole gang (its victim unit)."""
    node = Node("node-a", "rack-0", "G2", 8, 96000, 393216)
    low = _gang("low", 200, 2, 4, 0.0, 8 * 3600)
    high = _gang("high", 800, 1, 4, 1000.0, 8 * 3600)
    return Workload((node,), (low, high))


def _run(policy: str, horizon: float = 5400.0) -> dict:
    return policy_report(
        Replay(_one_node_scenario(), policy, horizon=horizon, checkpoint_seconds=CHECKPOINT).run()
    )


def test_legacy_breaks_the_gang_that_atomic_policies_evict_whole():
    # The low gang binds at the first cycle after its arrival (t=10) and has done 1,000 s of work
    # when the high gang preempts at t=1,010: it falls back to its checkpoint at 600 s.
    lost = round((1000 - CHECKPOINT) * 8 / 3600, 1)
    legacy = _run("legacy")
    assert legacy["brokenGangs"] == 1 and legacy["brokenGangsByMode"] == {"all": 1, "single": 0}
    assert legacy["evictions"] == 1 and legacy["gangsEvictedWhole"] == 0
    # The surviving pod holds its 4 GPUs, idle, until the gang's framework gives up and it restarts whole.
    assert legacy["idleGpuHoursInBrokenGangs"] == round(4 * BROKEN_RESTART_SECONDS / 3600, 1)
    assert legacy["brokenGangRestarts"] == 1
    assert legacy["gpuHoursLostGangs"] == lost
    for policy in ("gangweb", "kep5710"):
        atomic = _run(policy)
        assert atomic["brokenGangs"] == 0, policy
        assert atomic["idleGpuHoursInBrokenGangs"] == 0.0
        assert atomic["evictions"] == 2 and atomic["gangsEvictedWhole"] == 1
        assert atomic["gpuHoursLostGangs"] == lost
        assert atomic["evictionsAtOrAbovePreemptorPriority"] == 0
        # Both policies start the high gang at once: its wait is the cycle it arrived in.
        assert atomic["waitSecondsP50ByTier"]["high"] == CYCLE_SECONDS
    # The same work gets done, but legacy's broken gang held 4 GPUs for nothing meanwhile.
    gangweb = _run("gangweb")
    assert legacy["utilisation"] == gangweb["utilisation"]
    held_idle = 4 * BROKEN_RESTART_SECONDS / (5400.0 * 8)
    assert legacy["allocation"] == pytest.approx(gangweb["allocation"] + held_idle, abs=1e-4)


def test_without_preemption_nothing_is_evicted_and_the_high_gang_waits():
    none = _run("none")
    assert none["evictions"] == 0 and none["gpuHoursLost"] == 0.0 and none["plans"] == 0
    # The low gang runs 8 h, longer than the replay: the high gang never starts, and its wait is censored.
    assert none["gangsNeverStartedByTier"]["high"] == 1
    assert none["waitSecondsP50ByTier"]["high"] == 5400.0 - 1000.0


def test_a_broken_gang_that_gets_its_pods_back_resumes_from_its_checkpoint():
    # The high gang finishes after 300 s of work, before the broken gang's restart deadline: the
    # evicted pod binds again and the gang works on; it is broken once and never restarted.
    workload = _one_node_scenario()
    short = workload.jobs[1].__class__(**{**workload.jobs[1].__dict__, "work": 300.0})
    report = policy_report(
        Replay(
            Workload(workload.nodes, (workload.jobs[0], short)),
            "legacy",
            horizon=5400.0,
            checkpoint_seconds=CHECKPOINT,
        ).run()
    )
    assert report["brokenGangs"] == 1 and report["brokenGangRestarts"] == 0
    assert 0 < report["idleGpuHoursInBrokenGangs"] < round(4 * BROKEN_RESTART_SECONDS / 3600, 1)


@pytest.fixture(scope="module")
def seeded_reports() -> dict[int, dict]:
    return {
        seed: run_replay(ReplayConfig(trace=FIXTURE, hours=6, seed=seed, gang_load=0.8)).report
        for seed in (1, 2, 3)
    }


@pytest.mark.slow
def test_the_same_seed_gives_the_same_report(seeded_reports):
    again = run_replay(ReplayConfig(trace=FIXTURE, hours=6, seed=2, gang_load=0.8)).report
    assert json.dumps(without_timing(again), sort_keys=True) == json.dumps(
        without_timing(seeded_reports[2]), sort_keys=True
    )
    assert without_timing(seeded_reports[1]) != without_timing(seeded_reports[2])


@pytest.mark.slow
def test_policies_keep_their_promises_on_seeded_replays(seeded_reports):
    preempted = 0
    for seed, report in seeded_reports.items():
        policies = report["policies"]
        assert set(policies) == {"gangweb", "kep5710", "legacy", "none"}
        for name, figures in policies.items():
            # No policy ever evicts a pod of higher or equal priority than the gang it makes room for.
            assert figures["evictionsAtOrAbovePreemptorPriority"] == 0, (seed, name)
        for name in ("gangweb", "kep5710"):
            # Every `all` gang an atomic policy preempts is evicted whole (only `single` gangs may lose some pods).
            assert policies[name]["brokenGangsByMode"]["all"] == 0, (seed, name)
        none = policies["none"]
        assert none["evictions"] == 0 and none["gpuHoursLost"] == 0.0 and none["brokenGangs"] == 0
        preempted += policies["gangweb"]["evictions"]
    assert preempted > 0  # the replays did exercise preemption


def test_the_replay_reports_idle_time_under_the_live_figures_causes(seeded_reports):
    waited = 0.0
    for report in seeded_reports.values():
        for figures in report["policies"].values():
            idle = figures["idleGpuHours"]
            assert list(idle) == ["freeWhileWaiting", "brokenGangs", "allocatedIdle", "heldForUnplaced"]
            assert idle["brokenGangs"] == figures["idleGpuHoursInBrokenGangs"]
            assert idle["allocatedIdle"] is None  # the trace has no GPU activity
            waited += idle["freeWhileWaiting"]
    assert waited > 0  # gangs waited beside free GPUs somewhere


@pytest.mark.slow
def test_on_forty_nodes_of_the_real_trace_legacy_breaks_gangs_and_atomic_policies_do_not():
    """Tens of nodes of Alibaba's trace, the copy shipped with gangweb."""
    trace = default_trace_dir()
    report = run_replay(ReplayConfig(trace=trace, hours=6, nodes=40, seed=3, gang_load=0.7)).report
    policies = report["policies"]
    assert report["nodes"] == 40
    assert policies["legacy"]["brokenGangsByMode"]["all"] > 0
    assert policies["legacy"]["idleGpuHoursInBrokenGangs"] > 0
    for name in ("gangweb", "kep5710"):
        assert policies[name]["brokenGangsByMode"]["all"] == 0
        assert policies[name]["evictions"] > 0
    for figures in policies.values():
        assert figures["evictionsAtOrAbovePreemptorPriority"] == 0
    assert policies["none"]["evictions"] == 0
    # gangweb throws away less work than the beta algorithm on the same arrivals.
    assert policies["gangweb"]["gpuHoursLost"] < policies["kep5710"]["gpuHoursLost"]


def test_a_cluster_too_small_for_any_gang_replays_its_trace_pods_alone(trace_dir):
    (trace_dir / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nsmall,64000,262144,1,P100\n"
    )
    report = run_replay(ReplayConfig(trace=trace_dir, hours=6, seed=1)).report
    assert report["gpus"] == 1 and report["workload"]["gangsSubmitted"] == 0
    assert report["workload"]["backgroundPodsSubmitted"] > 0
    assert all(figures["evictions"] == 0 for figures in report["policies"].values())


def _run_with(policy: str, **options) -> dict:
    return policy_report(
        Replay(_one_node_scenario(), policy, horizon=5400.0, checkpoint_seconds=CHECKPOINT, **options).run()
    )


@pytest.mark.parametrize("policy", ["gangweb", "kep5710"])
def test_a_notice_long_enough_to_save_keeps_the_work_and_delays_the_preemptor(policy):
    # Planned at t=1,010 with 1,000 s of work done. The low gang (8 GPUs) saves in 30 + 0.5 x 8 = 34 s,
    # within a 60 s notice: it is evicted at t=1,044, losing only the 34 s it worked while saving.
    noticed = _run_with(policy, notice_seconds=60.0)
    assert noticed["gpuHoursLostGangs"] == round(34 * 8 / 3600, 1) == 0.1
    assert noticed["evictions"] == 2 and noticed["gangsEvictedWhole"] == 1
    # The high gang starts when its victims are gone: 34 s after the cycle that planned it.
    assert noticed["waitSecondsP50ByTier"]["high"] == CYCLE_SECONDS + 34
    # Without notice it falls back to its checkpoint at 600 s: 400 s x 8 GPUs lost.
    assert _run(policy)["gpuHoursLostGangs"] == round(400 * 8 / 3600, 1)


def test_a_notice_too_short_to_save_evicts_at_the_deadline_from_the_last_checkpoint():
    short = _run_with("gangweb", notice_seconds=20.0)
    # Evicted at t=1,030 with 1,020 s done: back to the checkpoint at 600 s.
    assert short["gpuHoursLostGangs"] == round(420 * 8 / 3600, 1)
    assert short["waitSecondsP50ByTier"]["high"] == CYCLE_SECONDS + 20


def test_a_lost_work_budget_makes_the_preemptor_wait_rather_than_overdraw_it():
    capped = _run_with("gangweb", lost_work_budget_gpu_hours=0.0)
    assert capped["evictions"] == 0 and capped["gpuHoursLostGangs"] == 0.0
    assert capped["gangsNeverStartedByTier"]["high"] == 1
    # A budget with room left lets the one unit go, as without a budget.
    assert _run_with("gangweb", lost_work_budget_gpu_hours=0.1)["evictions"] == 2
