"""What a gang source declares: the types every module of ``admission.sources`` fills in.

A source is one way of telling, from a pod alone, which gang it belongs to (gangweb's label, another gang
scheduler's, a workload controller's), plus what gangweb needs to know about that source elsewhere: the
objects the ensurer reads to size the gang, how big the gang is from such an object, and, for controllers
the validating webhook reviews, how many pods they run at once and which pod templates they hold.

Pure, and on the request path: a claim is made for every pod creation, so the claim types are msgspec
Structs (C constructors) and the claim rules read plain dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec

from admission.podview import ObjectMeta


class OwnerRef(msgspec.Struct, frozen=True, gc=False):
    """The object whose spec fixes the gang size when the pod does not carry it."""

    api_version: str
    kind: str
    name: str


class Claim(msgspec.Struct, frozen=True, gc=False):
    """What a source says about a pod it recognises."""

    raw_name: str  # the gang's name as the source spells it (``podgroup_name`` makes it an object name)
    source: str  # the source's name, recorded on the PodGroup (``gangweb.io/gang-source``)
    min_count: int | None = None  # None: read it from ``owner`` (the source's ``size`` rule)
    owner: OwnerRef | None = None


# A source recognises the pod and says it is deliberately not a gang member (stop looking): a KubeRay
# head, a TrainJob's initializer.
NO_GANG = Claim("", "")

# (labels, annotations, metadata) -> Claim, NO_GANG, or None when the source does not recognise the pod.
ClaimRule = Callable[[dict[str, str], dict[str, str], ObjectMeta], "Claim | None"]
# (owner's spec, the pod's metadata) -> the gang size the owning object implies (< 1: it does not say).
SizeRule = Callable[[dict[str, Any], ObjectMeta], int]


@dataclass(frozen=True, slots=True)
class OwnerResource:
    """Where an owning object lives on the API: read by the ensurer, served by scheduler.kube's test
    server, allowed by deploy/base/rbac.yaml (tests/admission/sources check the last two)."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


class Capacity(NamedTuple):
    pods: int  # how many pods the controller runs at once
    decided_by: str  # the field(s) that decide it, for messages


class Template(NamedTuple):
    where: str  # the template's place in the object, for messages ("replicatedJobs[workers]")
    template: dict[str, Any]  # the pod template (metadata + spec)


def no_problems(spec: dict[str, Any], capacity: Capacity) -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class ControllerRules:
    """A controller whose own objects the validating webhook reviews (``controllers.validate``)."""

    capacity: Callable[[dict[str, Any]], Capacity]
    templates: Callable[[dict[str, Any]], list[Template]]  # the pod templates of the gang's members
    # Reasons to reject the object beyond the shared checks (e.g. a Kubeflow minAvailable above its replicas).
    problems: Callable[[dict[str, Any], Capacity], list[str]] = no_problems
    versions: tuple[str, ...] = ("*",)  # the API versions the webhook rule names


class PodLimit(NamedTuple):
    annotation: str  # an annotation the source's controller sets on the pod: the gang's size
    what: str  # "its LeaderWorkerSet group", for messages


@dataclass(frozen=True, slots=True)
class GangSource:
    name: str  # as ``gangweb.io/gang-source`` records it
    claim: ClaimRule
    # The label and annotation keys whose presence starts the claim. A source with none (the Job, found by
    # its owner reference) is tried after every source with keys has passed on the pod.
    labels: frozenset[str] = frozenset()
    annotations: frozenset[str] = frozenset()
    # What the ensurer reads to size the gang when the pod does not say (claims name one of these).
    owners: tuple[OwnerResource, ...] = ()
    size: SizeRule | None = None  # the gang size from one of ``owners``
    controller: ControllerRules | None = None  # the webhook reviews ``owners`` themselves
    # An annotation on pods (and so on pod templates) that asks for a gang size.
    size_annotation: str | None = None
    pod_limit: PodLimit | None = None
    aliases: tuple[str, ...] = ()  # other names its claims record (JobSet's "trainjob")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


# --- reading untrusted objects ---------------------------------------------------------------------


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def positive_int(value: Any) -> int | None:
    """A label or annotation holding a whole number >= 1, as that number; else None."""
    # The same as matching [1-9][0-9]{0,8}, without the regular expression engine (per request).
    if (
        value.__class__ is str
        and 0 < len(value) < 10
        and value.isascii()
        and value.isdigit()
        and value[0] != "0"
    ):
        return int(value)
    return None


def min_member(spec: dict[str, Any], metadata: ObjectMeta) -> int:
    """The size rule of other gang schedulers' PodGroups: coscheduling, Volcano and KAI call it minMember."""
    return int_or(spec.get("minMember"), 0)
