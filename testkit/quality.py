"""How close do the policies get to the cheapest possible plan? A brute-force study on small clusters.

For random clusters small enough to enumerate every set of eligible victim units, the optimum is
the cheapest set (docs/design.md cost order) after which the whole gang has an exact placement (found by
backtracking, same filters and topology rule as the engine). Each policy's plan is compared with it, and
for gangweb, whose plans say whether its exact search proved them the cheapest, how many are proven and
how many of those the brute force confirms.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np

from scheduler.engine.builders import node, pdb, pod, podgroup
from scheduler.engine.checkpoints import CHECKPOINT_ANNOTATION
from scheduler.engine.contract import PROVEN, Cost
from scheduler.engine.entry import plan
from scheduler.engine.evaluation import Problem
from scheduler.engine.gangkey import gang_key_of
from scheduler.engine.placement import fit_columns, node_mask
from scheduler.engine.policies import POLICIES
from scheduler.engine.preemptor import Preemptor
from scheduler.engine.snapshot import parse_snapshot
from scheduler.engine.victims import victim_cost

MAX_UNITS = 10
# The gang every sampled cluster asks to place.
PREEMPTOR = gang_key_of("default", "hi")


def small_cluster(rng: random.Random) -> list[dict[str, Any]]:
    objects, free = [], {}
    for i in range(rng.randint(2, 6)):
        gpus = rng.choice((4, 8))
        objects.append(node(f"n{i}", gpus=gpus, labels={"rack": f"r{i % 2}"}))
        free[f"n{i}"] = gpus
    names = list(free)

    def bind(gpus: int) -> str | None:
        start = rng.randrange(len(names))
        for k in range(len(names)):
            name = names[(start + k) % len(names)]
            if free[name] >= gpus:
                free[name] -= gpus
                return name
        return None

    for g in range(rng.randint(1, 4)):
        objects.append(
            podgroup(
                f"v{g}", mode=rng.choice(("all", "single")), priority=rng.choice((1, 5, 10, 50)), min_count=1
            )
        )
        for k in range(rng.randint(1, 4)):
            gpus = rng.choice((1, 2, 4))
            where = bind(gpus)
            if where:
                objects.append(
                    pod(
                        f"v{g}-{k}",
                        node=where,
                        gpus=gpus,
                        group=f"v{g}",
                        labels={"app": f"v{g}"},
                        start=f"2026-06-{rng.randint(1, 28):02d}T00:00:00Z",
                    )
                )
    for b in range(rng.randint(0, 4)):
        gpus = rng.choice((1, 2, 4, 8))
        where = bind(gpus)
        if where:
            objects.append(
                pod(
                    f"bare{b}",
                    node=where,
                    gpus=gpus,
                    priority=rng.choice((1, 5, 10, 50)),
                    start=f"2026-06-{rng.randint(1, 28):02d}T00:00:00Z",
                    labels={"app": "bare"},
                )
            )
    if rng.random() < 0.3:
        objects.append(
            pdb("guard", match_labels={"app": rng.choice(("bare", "v0"))}, allowed=rng.randint(0, 1))
        )
    count = rng.randint(1, 4)
    objects.append(
        podgroup(
            "hi", min_count=count, priority=100, mode="all", topology="rack" if rng.random() < 0.3 else None
        )
    )
    gpus = rng.choice((2, 4, 8))
    objects += [pod(f"hi-{i}", group="hi", gpus=gpus) for i in range(count)]
    return _checkpointed(objects)


def _checkpointed(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Half the victims' groups and bare pods report a last checkpoint, so the lost work the optimum weighs
    is checkpoint-aware too. Drawn from the cluster itself, not from the study's generator: the clusters
    are the ones the study always drew."""
    marks = random.Random(repr([(o["kind"], o["metadata"]["name"]) for o in objects]))
    for obj in objects:
        name = obj["metadata"]["name"]
        reports = (obj["kind"] == "PodGroup" and name != "hi") or name.startswith("bare")
        if reports and marks.random() < 0.5:
            obj["metadata"].setdefault("annotations", {})[CHECKPOINT_ANNOTATION] = (
                f"2026-06-{marks.randint(1, 28):02d}T12:00:00Z"
            )
    return objects


def _exact_fit(problem: Problem, free: np.ndarray) -> bool:
    """Can every pending pod be placed (backtracking), all in one topology domain?"""
    snap, gang = problem.snapshot, problem.gang
    domains, _ = gang.domains()
    pods = gang.pending
    for domain in domains:
        local = free[domain.nodes].copy()
        masks = [node_mask(snap, snap.pods[p])[domain.nodes] for p in pods]

        def place(i: int, local: np.ndarray = local, masks: list[np.ndarray] = masks) -> bool:
            if i == len(pods):
                return True
            request = snap.pod_req[pods[i]]
            cols = fit_columns(request)
            for j in np.flatnonzero(masks[i]).tolist():
                if np.all(local[j, cols] >= request[cols]):
                    local[j] -= request
                    if place(i + 1):
                        return True
                    local[j] += request
            return False

        if place(0):
            return True
    return False


def optimum(problem: Problem) -> Cost | None:
    """The cheapest victim set that lets the whole gang in, by brute force (None: none does)."""
    units = problem.units
    eligible = list(range(problem.first_eligible, len(units.units)))
    best: Cost | None = None
    for size in range(1, len(eligible) + 1):
        for subset in combinations(eligible, size):
            cost = victim_cost(units, subset)
            if best is not None and cost >= best:
                continue
            free = problem.snapshot.free.copy()
            for u in subset:
                for node_index, req in units.units[u].node_req.items():
                    free[node_index] += req
            if _exact_fit(problem, free):
                best = cost
    return best


def study(samples: int, seed: int = 1, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    rng = random.Random(seed)
    # Policies that evict whole units: a group-unaware one's victim sets are not the same kind of answer.
    graded = [name for name, policy in POLICIES.items() if policy.atomic]
    tally: dict[str, dict[str, int]] = {p: {"optimal": 0, "worse": 0, "short": 0} for p in graded}
    # A policy whose plans say whether they are proven: how many are, and how many of those are optimal.
    for name in graded:
        if POLICIES[name].searches_exactly:
            tally[name].update(proven=0, proven_optimal=0)
    studied = 0
    while studied < samples:
        snap = parse_snapshot(small_cluster(rng))
        problem = Problem(snap, Preemptor(snap, PREEMPTOR))
        if not 0 < problem.eligible_count <= MAX_UNITS or _exact_fit(problem, snap.free):
            continue
        best = optimum(problem)
        if best is None:
            continue
        studied += 1
        if progress and studied % 50 == 0:
            progress(f"quality: {studied}/{samples} clusters")
        for policy, marks in tally.items():
            result = plan(snap, PREEMPTOR, policy)
            if not result.feasible or len(result.placement) < len(problem.gang.pending):
                marks["short"] += 1
            elif result.cost > best:
                marks["worse"] += 1
            elif result.cost == best:
                marks["optimal"] += 1
            else:  # cheaper than the brute force: one of the two is wrong
                raise AssertionError(f"{policy} beat the brute-force optimum: {result.cost} < {best}")
            if "proven" in marks and result.optimality == PROVEN:
                marks["proven"] += 1
                marks["proven_optimal"] += result.cost == best
    return {"samples": studied, "seed": seed, "policies": tally}


def format_study(found: dict[str, Any]) -> str:
    lines = [
        f"plan quality on {found['samples']} small clusters (seed {found['seed']}), "
        "against the brute-force cheapest victim set:"
    ]
    for policy, marks in found["policies"].items():
        share = 100.0 * marks["optimal"] / max(found["samples"], 1)
        lines.append(
            f"  {policy:<8} optimal {marks['optimal']:>5} ({share:5.1f} %)  worse {marks['worse']:>5}  "
            f"placed fewer pods {marks['short']:>5}"
        )
        if "proven" in marks:
            proven = marks["proven"]
            where = 100.0 * marks["proven_optimal"] / proven if proven else 0.0
            lines.append(
                f"  {'':<8} proven  {proven:>5} ({100.0 * proven / max(found['samples'], 1):5.1f} %)  "
                f"optimal where proven {marks['proven_optimal']:>5} ({where:5.1f} %)"
            )
    return "\n".join(lines)
