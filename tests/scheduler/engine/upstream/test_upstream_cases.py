"""kube-scheduler's own pod-group preemption cases, replayed against our engine.

Each `tests/fixtures/upstream/<case>.yaml` is a cluster snapshot and `<case>.expect.json` the plan
kube-scheduler's beta evaluator produces for it (reasoned from the upstream tests, see the
README there). The `kep5710` policy must reproduce it; the `gangweb` policy must be at least as
good by DESIGN.md's cost order and match the cheapest plan where a case pins one.
Pure engine tests: no Django, no cluster.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from scheduler.engine import load_snapshot, plan

FIXTURE_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "upstream"
GENERATOR = FIXTURE_DIR / "_build" / "generate.py"
POLICY_ANNOTATION = "gangweb.io/preemption-policy"

# Cases where the engine is known to disagree with upstream semantics: name -> reason.
# Each becomes a strict xfail, so fixing the engine turns the test red until the entry goes.
KNOWN_ENGINE_GAPS: dict[str, str] = {}


def _case_params():
    params = []
    for expect_path in sorted(FIXTURE_DIR.glob("*.expect.json")):
        name = expect_path.name.removesuffix(".expect.json")
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_ENGINE_GAPS[name])] if name in KNOWN_ENGINE_GAPS else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


CASES = _case_params()


def _expected(name: str) -> dict:
    return json.loads((FIXTURE_DIR / f"{name}.expect.json").read_text())


def _documents(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((FIXTURE_DIR / f"{name}.yaml").read_text()) if doc]


def _plan(name: str, policy: str) -> dict:
    expected = _expected(name)
    # A fresh snapshot per plan, so one policy cannot leak state into the other.
    return plan(load_snapshot(FIXTURE_DIR / f"{name}.yaml"), expected["podGroup"], policy=policy).to_dict()


def _explain(expected: dict, got: dict) -> str:
    return (f"\nupstream: {expected['source']}\nwhy: {expected['why']}\n"
            f"engine said: feasible={got['feasible']} evictions={got['evictions']} "
            f"domain={got.get('domain')} reason={got.get('reason')!r}")


def _pending_members(docs: list[dict], pod_group: str) -> set[str]:
    namespace, name = pod_group.split("/", 1)
    return {
        f"{namespace}/{doc['metadata']['name']}" for doc in docs
        if doc["kind"] == "Pod" and doc["metadata"].get("namespace") == namespace
        and (doc["spec"].get("schedulingGroup") or {}).get("podGroupName") == name
        and not doc["spec"].get("nodeName")
    }


def _group_spec(docs: list[dict], pod_group: str) -> dict:
    namespace, name = pod_group.split("/", 1)
    return next(doc for doc in docs if doc["kind"] == "PodGroup"
                and doc["metadata"]["name"] == name and doc["metadata"].get("namespace") == namespace)


def _selector_matches(selector: dict | None, labels: dict) -> bool:
    if selector is None:
        return False  # a nil selector selects nothing; {} selects everything
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or []:
        key, operator, values = requirement["key"], requirement["operator"], requirement.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def pdb_violations(docs: list[dict], evictions: list[str]) -> int:
    """Evicted pods beyond each budget's disruptionsAllowed (pods already in disruptedPods are free)."""
    pods = {f"{d['metadata'].get('namespace')}/{d['metadata']['name']}": d for d in docs if d["kind"] == "Pod"}
    violations = 0
    for budget in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        namespace = budget["metadata"].get("namespace")
        status = budget.get("status") or {}
        already_disrupted = set((status.get("disruptedPods") or {}).keys())
        charged = [
            key for key in evictions
            if key.split("/", 1)[0] == namespace and key.split("/", 1)[1] not in already_disrupted
            and _selector_matches(budget["spec"].get("selector"), pods[key]["metadata"].get("labels") or {})
        ]
        violations += max(0, len(charged) - int(status.get("disruptionsAllowed", 0)))
    return violations


def plan_cost(docs: list[dict], got: dict) -> tuple:
    """DESIGN.md's order: PDB violations, highest victim priority, sum of victim priorities,
    victim units, evicted pods. (Lost GPU-seconds is last; these fixtures hold no GPUs.)"""
    priorities = [victim["priority"] for victim in got["victims"]]
    return (
        pdb_violations(docs, got["evictions"]),
        max(priorities, default=float("-inf")),
        sum(priorities),
        len(got["victims"]),
        len(got["evictions"]),
    )


def _assert_contract(got: dict, pod_group: str, policy: str) -> None:
    assert got["podGroup"] == pod_group and got["policy"] == policy
    assert got["evictions"] == sorted(got["evictions"]), "evictions must be sorted"
    listed = sorted(p for victim in got["victims"] for p in victim["pods"])
    assert listed == got["evictions"], "each victim lists its own pods and together they are the evictions"
    if not got["feasible"]:
        assert got["victims"] == [] and got["evictions"] == [], "an infeasible plan evicts nothing"


def _assert_places_enough(docs: list[dict], got: dict, pod_group: str) -> None:
    if not got["feasible"]:
        return
    placed = _pending_members(docs, pod_group) & set(got["placement"])
    gang = _group_spec(docs, pod_group)["spec"]["schedulingPolicy"].get("gang")
    needed = gang["minCount"] if gang else 1
    assert len(placed) >= needed, f"a feasible plan places at least {needed} pending pods, got {sorted(placed)}"


@pytest.mark.parametrize("name", CASES)
def test_kep5710_reproduces_kube_scheduler(name):
    expected = _expected(name)
    docs = _documents(name)
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
    _assert_places_enough(docs, got, expected["podGroup"])


@pytest.mark.parametrize("name", CASES)
def test_gangweb_never_worse_than_kep5710(name):
    expected = _expected(name)
    docs = _documents(name)
    reference = _plan(name, "kep5710")
    got = _plan(name, "gangweb")
    why = _explain(expected, got)

    _assert_contract(got, expected["podGroup"], "gangweb")
    # Removing every candidate is the most room any plan can get, and Never forbids preemption
    # for every policy, so feasibility is the same for both policies on these cases.
    assert got["feasible"] is expected["feasible"], why
    _assert_places_enough(docs, got, expected["podGroup"])
    if reference["feasible"]:
        members = _pending_members(docs, expected["podGroup"])
        placed, reference_placed = len(members & set(got["placement"])), len(members & set(reference["placement"]))
        assert placed >= reference_placed, f"gangweb placed {placed} pods, kep5710 {reference_placed}{why}"
        if placed == reference_placed:
            assert plan_cost(docs, got) <= plan_cost(docs, reference), (
                f"gangweb cost {plan_cost(docs, got)} > kep5710 cost {plan_cost(docs, reference)}{why}")
    pinned = expected.get("gangweb")
    if pinned:
        assert got["feasible"] is pinned["feasible"], why
        assert got["evictions"] == pinned["evictions"], why
        if "domain" in pinned:
            assert got["domain"] == pinned["domain"], why


def _never_cases():
    """Cases whose preemptor may not preempt: the annotation wins, else spec.preemptionPolicy."""
    names = []
    for param in CASES:
        name = param.values[0]
        group = _group_spec(_documents(name), _expected(name)["podGroup"])
        annotation = (group["metadata"].get("annotations") or {}).get(POLICY_ANNOTATION)
        if (annotation or group["spec"].get("preemptionPolicy")) == "Never":
            policies = ("kep5710", "gangweb") if annotation else ("kep5710", "gangweb", "legacy")
            names.extend(pytest.param(name, policy, id=f"{name}-{policy}") for policy in policies)
    return names


@pytest.mark.parametrize(("name", "policy"), _never_cases())
def test_never_policy_never_preempts(name, policy):
    """DESIGN.md 'Living beside kube-scheduler': a Never group never preempts; with spec Never and
    no annotation that holds for every policy, `legacy` included."""
    assert _plan(name, policy)["evictions"] == [], f"{policy} preempted for a Never group"


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
    assert len([n for n in rendered if n.endswith(".expect.json")]) >= 25
