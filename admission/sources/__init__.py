"""The gang sources, in the order the webhook tries them: the registry.

Each module of this package is one source (``base.GangSource``): how it claims a pod, the objects the
ensurer reads to size its gang, the size and capacity rules, and what the validating webhook reviews.
``inference``, ``podgroups``, ``controllers``, ``validate`` and ``webhookconfig`` read this list; the RBAC
in deploy/ and scheduler.kube's owner resources are tested against it (tests/admission/sources).

Order matters: gang schedulers before workload controllers, so a cluster migrating from another gang
scheduler keeps its workloads unchanged; JobSet and Kubeflow before Job, whose labels their pods carry too.
A source without trigger keys (the Job, found by its owner reference) is tried last.

Adding a source: a module here defining ``SOURCE``, its place in ``SOURCES``, a pod fixture (and owner
fixture) in tests/fixtures/admission with its line in expected.yaml; the tests then name any RBAC rule or
scheduler.kube resource its owners still lack.
"""

from __future__ import annotations

from admission.sources import (
    coscheduling,
    gangweb,
    job,
    jobset,
    kai,
    kubeflow,
    kueue,
    leaderworkerset,
    ray,
    volcano,
    yunikorn,
)
from admission.sources.base import NO_GANG, Claim, GangSource, OwnerRef, OwnerResource, PodLimit

SOURCES: tuple[GangSource, ...] = (
    gangweb.SOURCE,
    coscheduling.SOURCE,
    volcano.SOURCE,
    kueue.SOURCE,
    yunikorn.SOURCE,
    kai.SOURCE,
    leaderworkerset.SOURCE,
    jobset.SOURCE,
    kubeflow.SOURCE,
    ray.SOURCE,
    job.SOURCE,
)

_BY_NAME = {name: source for source in SOURCES for name in source.names}
# The controllers the validating webhook reviews, by (API group, kind).
_CONTROLLERS = {(r.group, r.kind): source for source in SOURCES if source.controller for r in source.owners}


def source_named(name: str) -> GangSource | None:
    """The source whose claims record ``name`` (``gangweb.io/gang-source``)."""
    return _BY_NAME.get(name)


def controller_source(group: str, kind: str) -> GangSource | None:
    """The source whose controller objects of this group and kind the validating webhook checks."""
    return _CONTROLLERS.get((group, kind))


def owner_resources() -> tuple[OwnerResource, ...]:
    """Every object the ensurer may read, in source order, each once."""
    return tuple(dict.fromkeys(r for source in SOURCES for r in source.owners))


# Annotations on pods and pod templates that ask for a gang size (gangweb's own first).
SIZE_ANNOTATIONS: tuple[str, ...] = tuple(s.size_annotation for s in SOURCES if s.size_annotation)
# Annotations a controller sets on its pods with the size of their group.
POD_LIMITS: tuple[PodLimit, ...] = tuple(s.pod_limit for s in SOURCES if s.pod_limit)

__all__ = [
    "NO_GANG",
    "POD_LIMITS",
    "SIZE_ANNOTATIONS",
    "SOURCES",
    "Claim",
    "GangSource",
    "OwnerRef",
    "OwnerResource",
    "controller_source",
    "owner_resources",
    "source_named",
]
