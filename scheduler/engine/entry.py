"""``plan()``: the one entry point from a snapshot and a PodGroup name to a ``Plan``.

Fan-out seam (for the Celery pipeline): ``can_shard`` says whether a policy walks domains,
``domain_shards`` splits its domain walk into parts, ``plan(..., domains=part)`` plans one part
anywhere the snapshot is, ``best_plan`` picks the winner.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .contract import Plan
from .errors import SnapshotError
from .evaluation import Problem
from .policies import DEFAULT_POLICY, POLICIES, policy_named
from .preemptor import Preemptor
from .snapshot import Snapshot


def _problem(snapshot: Snapshot, podgroup: str) -> Problem:
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError("plan() needs a Snapshot from load_snapshot() or parse_snapshot()")
    return Problem(snapshot, Preemptor(snapshot, podgroup))


def plan(
    snapshot: Snapshot,
    podgroup: str,
    policy: str = DEFAULT_POLICY,
    *,
    domains: Iterable[str | None] | None = None,
) -> Plan:
    """What it takes to place PodGroup ``namespace/name`` now, under the named policy.

    Deterministic: the same snapshot, group and policy always give the same plan. ``domains``
    limits gangweb's own domain walk to those topology values (a fan-out shard). Raises
    ``SnapshotError`` for an unknown group or policy.
    """
    chosen = policy_named(policy)
    problem = _problem(snapshot, podgroup)
    if domains is not None:
        problem.only_domains = set(domains)
    return chosen.plan(problem)


def can_shard(policy: str) -> bool:
    """Whether the named policy walks domains that a fan-out may deal out (``domain_shards``);
    False for an unknown name (``plan`` is the one to refuse it)."""
    chosen = POLICIES.get(policy)
    return chosen is not None and chosen.walks_domains


def domain_shards(
    snapshot: Snapshot, podgroup: str, parts: int, policy: str = DEFAULT_POLICY
) -> list[list[str | None]]:
    """The policy's candidate domains, most promising first, dealt round-robin into ``parts`` lists
    (all empty for a policy that walks no domains)."""
    chosen = policy_named(policy)
    problem = _problem(snapshot, podgroup)
    domains, why_not = problem.gang.domains()
    if why_not or not problem.gang.pending:
        return [[] for _ in range(max(parts, 1))]
    viable = chosen.ranked_domains(problem, domains)
    shards: list[list[str | None]] = [[] for _ in range(max(parts, 1))]
    for i, domain in enumerate(viable):
        shards[i % len(shards)].append(domain.name)
    return shards


def best_plan(plans: Sequence[Plan]) -> Plan:
    """The winner among plans for the same group: most pods placed, then the docs/design.md cost order."""
    if not plans:
        raise ValueError("best_plan() needs at least one plan")
    return min(plans, key=lambda p: p.rank)
