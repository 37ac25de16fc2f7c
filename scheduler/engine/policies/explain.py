"""Sentences for plan reasons (kept apart so every policy words things the same way)."""

from __future__ import annotations

from typing import Any

from scheduler.words import plural

from ..contract import NO_VICTIM_PRIORITY
from ..evaluation import Candidate, Problem

MAX_ALTERNATIVES = 3  # the cheapest other plans kept beside the chosen one


def _where(problem: Problem, candidate: Candidate) -> str:
    if candidate.domain.name is None:
        return ""
    return f" in {problem.gang.group.topology_key}={candidate.domain.name}"


def describe_choice(problem: Problem, candidate: Candidate, how: str) -> str:
    gang, units = problem.gang, problem.units.units
    victims = [units[u] for u in candidate.victims]
    placed = f"{candidate.placed} of {plural(len(gang.pending), 'pending pod')}"
    if not victims:
        return f"{placed} fit{_where(problem, candidate)} once room is made; no victim is needed ({how})"
    pods = sum(len(v.pods) for v in victims)
    gpus = sum(v.gpus for v in victims)
    groups = sum(1 for v in victims if v.kind != "Pod")
    top = max(v.priority for v in victims)
    violations = candidate.cost.pdb_violations if candidate.cost else 0
    parts = [
        f"evicting {plural(len(victims), 'victim unit')} ({plural(groups, 'whole group')}, {plural(pods, 'pod')}, "
        f"{plural(gpus, 'GPU')}; "
        f"highest priority {top} < {gang.priority}) places {placed}{_where(problem, candidate)}"
    ]
    if violations:
        parts.append(f"{plural(violations, 'pod exceeds', 'pods exceed')} their PodDisruptionBudget")
    parts.append(how)
    return "; ".join(parts)


def describe_infeasible(problem: Problem, most_placed: int) -> str:
    """Why no plan places the gang, in words a gang's owner reads (no label syntax, no counts of zero)."""
    gang = problem.gang
    need = (
        f"needs {gang.min_count} together (minCount {gang.min_count})"
        if gang.is_gang
        else "needs at least one"
    )
    running = f" beside its {plural(len(gang.running), 'running pod')}" if gang.running else ""
    key = gang.group.topology_key
    where = f"in any one {key.rsplit('/', 1)[-1]} (label {key})" if key else "in the cluster"
    eligible = problem.eligible_count
    if eligible > 1:
        evicted = f"even if all {eligible} lower-priority gangs and pods were evicted"
    elif eligible:
        evicted = "even if the one lower-priority gang or pod were evicted"
    else:
        evicted = "and nothing of lower priority could be evicted"
    fit = f"only {most_placed}" if most_placed else "none"
    return (
        f"not enough room {evicted}: {fit} of its {plural(len(gang.pending), 'waiting pod')} would fit "
        f"{where}{running}, and it {need}"
    )


def alternatives(problem: Problem, chosen: Candidate, tried: list[Candidate]) -> list[dict[str, Any]]:
    """The cheapest plans tried besides the chosen one, one per domain, with their cost (camelCase like
    the contract): what an operator compares the choice with."""
    seen = {chosen.domain.name}
    out = []
    for candidate in sorted(tried, key=Candidate.rank):
        if candidate is chosen or candidate.domain.name in seen:
            continue
        seen.add(candidate.domain.name)
        cost = candidate.cost
        out.append(
            {
                "domain": candidate.domain.name,
                "topologyKey": problem.gang.group.topology_key,
                "how": candidate.how,
                "placedPods": candidate.placed,
                "victimUnits": len(candidate.victims),
                "evictedPods": cost.evicted_pods,
                "highestVictimPriority": (
                    None
                    if cost.highest_victim_priority == NO_VICTIM_PRIORITY
                    else cost.highest_victim_priority
                ),
                "pdbViolations": cost.pdb_violations,
                "lostGpuSeconds": round(cost.lost_gpu_seconds, 3),
            }
        )
        if len(out) == MAX_ALTERNATIVES:
            break
    return out
