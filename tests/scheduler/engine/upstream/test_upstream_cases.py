"""kube-scheduler's own pod-group preemption cases, replayed against our engine.

Each `tests/fixtures/upstream/<case>.yaml` is a cluster snapshot and `<case>.expect.json` the plan
kube-scheduler's beta evaluator produces for it (reasoned from the upstream tests, see the
README there). The `kep5710` policy must reproduce it; the `gangweb` policy must be at least as
good by docs/design.md's cost order and match the cheapest plan where a case pins one. Every plan is
also replayed on the raw documents (evict, then bind). Pure engine tests: no Django, no cluster.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from scheduler.engine import load_snapshot, plan

from .raw_snapshot import POLICY_ANNOTATION, RawSnapshot, load_documents, plan_cost, replay_problems

FIXTURE_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "upstream"
GENERATOR = FIXTURE_DIR / "_build" / "generate.py"
POLICIES = ("kep5710", "gangweb")

# Cases where the engine is known to disagree with upstream semantics: name -> reason.
# Each becomes a strict xfail, so fixing the engine turns the test red until the entry goes.
KNOWN_ENGINE_GAPS: dict[str, str] = {}


def _expected(name: str) -> dict:
    return json.loads((FIXTURE_DIR / f"{name}.expect.json").read_text())


def _raw(name: str) -> RawSnapshot:
    return RawSnapshot(load_documents(FIXTURE_DIR / f"{name}.yaml"))


def _plan(name: str, policy: str) -> dict:
    # A fresh snapshot per plan, so one policy cannot leak state into the other.
    return plan(
        load_snapshot(FIXTURE_DIR / f"{name}.yaml"), _expected(name)["podGroup"], policy=policy
    ).to_dict()


def _marks(name: str) -> list:
    return (
        [pytest.mark.xfail(strict=True, reason=KNOWN_ENGINE_GAPS[name])] if name in KNOWN_ENGINE_GAPS else []
    )


NAMES = sorted(p.name.removesuffix(".expect.json") for p in FIXTURE_DIR.glob("*.expect.json"))
CASES = [pytest.param(name, id=name, marks=_marks(name)) for name in NAMES]
FEASIBLE_BY_POLICY = [
    pytest.param(name, policy, id=f"{name}-{policy}", marks=_marks(name))
    for name in NAMES
    if _expected(name)["feasible"]
    for policy in POLICIES
]


def _never_cases():
    """Preemptors that may not preempt (the annotation wins, else spec.preemptionPolicy). With spec
    Never and no annotation docs/design.md says no policy preempts, `legacy` included."""
    params = []
    for name in NAMES:
        group_key = _expected(name)["podGroup"]
        raw = _raw(name)
        if raw.preemption_policy(group_key) != "Never":
            continue
        annotated = POLICY_ANNOTATION in (raw.groups[group_key]["metadata"].get("annotations") or {})
        for policy in POLICIES if annotated else (*POLICIES, "legacy"):
            params.append(pytest.param(name, policy, id=f"{name}-{policy}"))
    return params


def _explain(expected: dict, got: dict) -> str:
    return (
        f"\nupstream: {expected['source']}\nwhy: {expected['why']}\n"
        f"engine said: feasible={got['feasible']} evictions={got['evictions']} "
        f"domain={got.get('domain')} reason={got.get('reason')!r}"
    )


def _assert_contract(got: dict, pod_group: str, policy: str) -> None:
    assert got["podGroup"] == pod_group and got["policy"] == policy
    assert got["evictions"] == sorted(got["evictions"]), "evictions must be sorted"
    listed = sorted(p for victim in got["victims"] for p in victim["pods"])
    assert listed == got["evictions"], "each victim lists its own pods and together they are the evictions"
    if not got["feasible"]:
        assert got["victims"] == [] and got["evictions"] == [], "an infeasible plan evicts nothing"


def _placed(raw: RawSnapshot, got: dict, group_key: str) -> int:
    return len(raw.pending_members(group_key) & set(got["placement"]))


def _needed(raw: RawSnapshot, group_key: str) -> int:
    """Pending pods a feasible plan must place: a gang counts its running members toward minCount."""
    gang = raw.groups[group_key]["spec"]["schedulingPolicy"].get("gang")
    return max(0, gang["minCount"] - len(raw.running_members(group_key))) if gang else 1


@pytest.mark.parametrize("name", CASES)
def test_kep5710_reproduces_kube_scheduler(name):
    expected = _expected(name)
    got = _plan(name, "kep5710")
    why = _explain(expected, got)

    _assert_contract(got, expected["podGroup"], "kep5710")
    assert got["feasible"] is expected["feasible"], why
    if "evictions" in expected:
        assert got["evictions"] == expected["evictions"], why
    else:
        assert got["evictions"] in expected["evictionsOneOf"], why
    if "domain" in expected:
        assert got["domain"] == expected["domain"], why


@pytest.mark.parametrize("name", CASES)
def test_gangweb_never_worse_than_kep5710(name):
    expected = _expected(name)
    raw = _raw(name)
    group_key = expected["podGroup"]
    reference = _plan(name, "kep5710")
    got = _plan(name, "gangweb")
    why = _explain(expected, got)

    _assert_contract(got, group_key, "gangweb")
    # Removing every candidate is the most room any plan can get, and Never binds every policy,
    # so on these cases both policies agree on feasibility.
    assert got["feasible"] is expected["feasible"], why
    if reference["feasible"]:
        placed, reference_placed = _placed(raw, got, group_key), _placed(raw, reference, group_key)
        assert placed >= reference_placed, f"gangweb placed {placed} pods, kep5710 {reference_placed}{why}"
        if placed == reference_placed:
            assert plan_cost(raw, got) <= plan_cost(raw, reference), (
                f"gangweb cost {plan_cost(raw, got)} > kep5710 cost {plan_cost(raw, reference)}{why}"
            )
    pinned = expected.get("gangweb")
    if pinned:
        assert got["feasible"] is pinned["feasible"], why
        assert got["evictions"] == pinned["evictions"], why
        if "domain" in pinned:
            assert got["domain"] == pinned["domain"], why


@pytest.mark.parametrize(("name", "policy"), FEASIBLE_BY_POLICY)
def test_plan_replays_on_the_snapshot(name, policy):
    """Evict the plan's victims, bind its placement: it must hold on the raw objects."""
    group_key = _expected(name)["podGroup"]
    raw = _raw(name)
    got = _plan(name, policy)
    assert got["feasible"], got["reason"]
    assert _placed(raw, got, group_key) >= _needed(raw, group_key), f"placement too small: {got['placement']}"
    assert replay_problems(raw, got, group_key) == [], got["reason"]


@pytest.mark.parametrize(("name", "policy"), _never_cases())
def test_never_policy_never_preempts(name, policy):
    """docs/design.md 'Living beside kube-scheduler': a Never group never preempts."""
    got = _plan(name, policy)
    assert got["evictions"] == [] and got["victims"] == [], f"{policy} preempted for a Never group"


def test_fixtures_match_case_tables():
    """The YAML/JSON on disk are generated from tests/fixtures/upstream/_build; they must not drift."""
    spec = importlib.util.spec_from_file_location("upstream_fixture_generator", GENERATOR)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    rendered = generator.rendered_files()
    on_disk = {p.name for p in FIXTURE_DIR.iterdir() if p.is_file()}
    assert on_disk == set(rendered), "run tests/fixtures/upstream/_build/generate.py"
    stale = [name for name, text in rendered.items() if (FIXTURE_DIR / name).read_text() != text]
    assert not stale, f"fixtures differ from the case tables, regenerate: {stale}"
    assert len(NAMES) >= 25
