"""Which gang (PodGroup) a pod belongs to, inferred from the pod alone.

Sources are tried in a fixed order (issue 4): gangweb's own label, then the labels/annotations of other
gang schedulers (so clusters migrate without editing workloads), then the labels that workload
controllers put on their pods. The pod's existing ``spec.schedulingGroup`` is *not* looked at here:
``mutate`` leaves such pods alone, and the controller side can call ``infer_gang`` on an admitted pod
and get the same answer the webhook got.

It reads the typed pod views of ``admission.podview``; label and annotation maps are dicts of strings.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec

from admission import labels as L
from admission.names import is_dns1123_subdomain
from admission.podview import EMPTY_MAP, ObjectMeta, Pod, controller_of, readable_pod
from admission.policy import DISRUPTION_MODES, AdmissionPolicy


class OwnerRef(msgspec.Struct, frozen=True, gc=False):
    """The object whose spec fixes the gang size when the pod does not carry it."""

    api_version: str
    kind: str
    name: str


@dataclass(slots=True)
class Gang:
    name: str  # the PodGroup name, a valid DNS subdomain
    source: str  # which rule found it, e.g. "jobset", "kueue"
    min_count: int | None  # None: read it from ``owner`` (see podgroups.resolve_min_count)
    owner: OwnerRef | None
    disruption_mode: str  # "all" | "single"
    mode: str  # "enforce" | "observe"
    raw_name: str  # the name as the source spelled it, before making it a valid object name


# Used with fullmatch: "$" alone would also accept a trailing newline ("abc\n" is not a name).
_INVALID_CHARS = re.compile(r"[^a-z0-9.-]+")


@lru_cache(maxsize=4096)  # the pods of one gang repeat the same name
def podgroup_name(raw: str) -> str:
    """``raw`` if it is a valid object name, else a readable valid name with a hash of ``raw``.

    The hash keeps two raw names that differ only in case or punctuation from sharing a group.
    """
    if is_dns1123_subdomain(raw):
        return raw
    digest = hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    readable = _INVALID_CHARS.sub("-", raw.lower()).strip(".-")[:200]
    # Every dot-separated label must be non-empty and start and end alphanumeric ("a..b", "x.-y" are not
    # names). Names that were already valid this way come out as before, so admitted pods keep their group.
    readable = ".".join(label for label in (part.strip("-") for part in readable.split(".")) if label)
    return f"{readable}-{digest}" if readable else f"gang-{digest}"


def positive_int(value: Any) -> int | None:
    # The same as matching [1-9][0-9]{0,8}, without the regular expression engine (per request).
    if value.__class__ is str and 0 < len(value) < 10 and value.isascii() and value.isdigit() and value[0] != "0":
        return int(value)
    return None


# Each source returns (raw name, source, min count or None, owner or None); None when it does not
# recognise the pod; NO_GANG when it does and the pod is deliberately not a gang member (stop looking).
_Found = tuple[str, str, int | None, OwnerRef | None]
NO_GANG = ("", "", None, None)


def _gangweb(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = labels.get(L.POD_GROUP_LABEL, "")
    if not name:
        return None
    return name, "gangweb", positive_int(annotations.get(L.MIN_COUNT_ANNOTATION)), None


def _coscheduling(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = labels.get(L.COSCHEDULING_LABEL, "") or labels.get(L.LEGACY_COSCHEDULING_LABEL, "")
    if not name:
        return None
    owner = OwnerRef("scheduling.x-k8s.io/v1alpha1", "PodGroup", name)
    return name, "coscheduling", positive_int(labels.get(L.LEGACY_COSCHEDULING_MIN_LABEL)), owner


def _volcano(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = annotations.get(L.VOLCANO_GROUP_ANNOTATION, "")
    if not name:
        return None
    return name, "volcano", None, OwnerRef("scheduling.volcano.sh/v1beta1", "PodGroup", name)


def _kueue(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = labels.get(L.KUEUE_POD_GROUP_LABEL, "")
    if not name:
        return None
    return name, "kueue", positive_int(annotations.get(L.KUEUE_POD_GROUP_COUNT_ANNOTATION)), None


def yunikorn_min_members(task_groups: str) -> int | None:
    """Sum of ``minMember`` over the task groups JSON; None when it is not usable."""
    # A gang's pods repeat the same task groups; only short ones are cached (annotations are untrusted
    # and may be large).
    return _cached_min_members(task_groups) if len(task_groups) <= 4096 else _min_members(task_groups)


def _min_members(task_groups: str) -> int | None:
    try:
        groups = json.loads(task_groups)
    except (ValueError, RecursionError):
        return None
    if not isinstance(groups, list) or not groups:
        return None
    total = 0
    for group in groups:
        member = group.get("minMember") if isinstance(group, dict) else None
        if not isinstance(member, int) or isinstance(member, bool) or member < 0:
            return None
        total += member
    return total or None


_cached_min_members = lru_cache(maxsize=1024)(_min_members)


def _yunikorn(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    # YuniKorn gangs are declared by task groups; an application id alone is not a gang.
    if not (annotations.get(L.YUNIKORN_TASK_GROUPS) or annotations.get(L.YUNIKORN_TASK_GROUP_NAME)):
        return None
    app = (
        labels.get(L.YUNIKORN_APP_ID_KEY, "")
        or annotations.get(L.YUNIKORN_APP_ID_KEY, "")
        or labels.get(L.YUNIKORN_APP_ID_LABEL, "")
    )
    if not app:
        return None
    task_groups = annotations.get(L.YUNIKORN_TASK_GROUPS)
    min_count = yunikorn_min_members(task_groups) if isinstance(task_groups, str) else None
    return app, "yunikorn", min_count, None


def _kai(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = annotations.get(L.KAI_POD_GROUP_ANNOTATION, "")
    if not name:
        return None
    return name, "kai-scheduler", None, OwnerRef("scheduling.run.ai/v2alpha2", "PodGroup", name)


def _leaderworkerset(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name, index = labels.get(L.LWS_NAME, ""), labels.get(L.LWS_GROUP_INDEX, "")
    if not (name and index):
        return None
    owner = OwnerRef("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", name)
    # One gang per group: a leader and its workers serve one model replica together.
    return f"{name}-{index}", "leaderworkerset", positive_int(annotations.get(L.LWS_SIZE)), owner


def _jobset(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = labels.get(L.JOBSET_NAME, "")
    if not name:
        return None
    step = labels.get(L.TRAINJOB_STEP, "")
    owner = OwnerRef("jobset.x-k8s.io/v1alpha2", "JobSet", name)
    if step:
        # A TrainJob: initializer steps finish before the trainer starts, so only the trainer is a gang.
        if step != L.TRAINJOB_TRAINER_STEP:
            return NO_GANG
        return name, "trainjob", None, owner
    return name, "jobset", None, owner


_KUBEFLOW_KINDS = {
    "pytorchjob-controller": "PyTorchJob",
    "tfjob-controller": "TFJob",
    "mpijob-controller": "MPIJob",
    "xgboostjob-controller": "XGBoostJob",
    "paddlejob-controller": "PaddleJob",
    "jaxjob-controller": "JAXJob",
}


def _kubeflow(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    name = labels.get(L.KUBEFLOW_JOB_NAME, "")
    if not name:
        return None
    controller = controller_of(metadata)
    if controller is not None and controller.name == name and controller.kind:
        # The owner itself says which kind and version (MPIJob is kubeflow.org/v2beta1, for one).
        owner = OwnerRef(controller.apiVersion or "kubeflow.org/v1", controller.kind, name)
    else:
        owner = OwnerRef("kubeflow.org/v1", _KUBEFLOW_KINDS.get(labels.get(L.KUBEFLOW_OPERATOR_NAME, ""), "PyTorchJob"), name)
    return name, "kubeflow", None, owner


def _raycluster(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    cluster, group = labels.get(L.RAY_CLUSTER, ""), labels.get(L.RAY_GROUP, "")
    # The head is a single long-lived pod, not part of a worker gang.
    if not (cluster and group):
        return None
    if labels.get(L.RAY_NODE_TYPE, "") != "worker":
        return NO_GANG
    return f"{cluster}-{group}", "raycluster", None, OwnerRef("ray.io/v1", "RayCluster", cluster)


def _job(labels: dict, annotations: dict, metadata: ObjectMeta) -> _Found | None:
    if not metadata.ownerReferences:
        return None
    controller = controller_of(metadata)
    # The legacy "job-name" label is also set by other operators; the owner reference is decisive.
    if controller is None or controller.kind != "Job" or controller.apiVersion != "batch/v1" or not controller.name:
        return None
    return controller.name, "job", None, OwnerRef("batch/v1", "Job", controller.name)


# The sources in order, each with the label and annotation keys it starts from. Order matters: gang
# schedulers before controllers; JobSet and Kubeflow before Job, whose labels they share. The Job rule
# (owner reference) comes last and needs no key.
_TRIGGERED_SOURCES = (
    (_gangweb, frozenset({L.POD_GROUP_LABEL}), frozenset()),
    (_coscheduling, frozenset({L.COSCHEDULING_LABEL, L.LEGACY_COSCHEDULING_LABEL}), frozenset()),
    (_volcano, frozenset(), frozenset({L.VOLCANO_GROUP_ANNOTATION})),
    (_kueue, frozenset({L.KUEUE_POD_GROUP_LABEL}), frozenset()),
    (_yunikorn, frozenset({L.YUNIKORN_APP_ID_KEY, L.YUNIKORN_APP_ID_LABEL}),
     frozenset({L.YUNIKORN_TASK_GROUPS, L.YUNIKORN_TASK_GROUP_NAME, L.YUNIKORN_APP_ID_KEY})),
    (_kai, frozenset(), frozenset({L.KAI_POD_GROUP_ANNOTATION})),
    (_leaderworkerset, frozenset({L.LWS_NAME}), frozenset()),
    (_jobset, frozenset({L.JOBSET_NAME}), frozenset()),
    (_kubeflow, frozenset({L.KUBEFLOW_JOB_NAME}), frozenset()),
    (_raycluster, frozenset({L.RAY_CLUSTER}), frozenset()),
)  # fmt: skip
_SOURCE_LABELS = frozenset().union(*(labels for _, labels, _ in _TRIGGERED_SOURCES))
_SOURCE_ANNOTATIONS = frozenset().union(*(annotations for _, _, annotations in _TRIGGERED_SOURCES))


# Which source each key starts. The keys of a pod's maps that start any source are found by one set
# intersection each; the sources they start, in the fixed order, are worked out once per combination.
_LABEL_SOURCE = {key: position for position, (_, keys, _) in enumerate(_TRIGGERED_SOURCES) for key in keys}
_ANNOTATION_SOURCE = {key: position for position, (_, _, keys) in enumerate(_TRIGGERED_SOURCES) for key in keys}
_SOURCE_FUNCTIONS = tuple(source for source, _, _ in _TRIGGERED_SOURCES)


@lru_cache(maxsize=1024)  # bounded: the key sets come from untrusted pods
def _sources_for(label_keys: frozenset[str], annotation_keys: frozenset[str]) -> tuple:
    positions = {_LABEL_SOURCE[key] for key in label_keys} | {_ANNOTATION_SOURCE[key] for key in annotation_keys}
    return tuple(_SOURCE_FUNCTIONS[position] for position in sorted(positions))


def infer_gang(pod: Pod | dict[str, Any], namespace: str, policy: AdmissionPolicy) -> Gang | None:
    """The gang ``pod`` belongs to, or None when no source claims it (or ``pod`` is not a Pod's shape)."""
    view = readable_pod(pod)
    return gang_of(view.metadata, namespace, policy) if view is not None else None


def claim_of(metadata: ObjectMeta) -> _Found | None:
    """(raw group name, source, min count or None, owner or None) of the rule that claims the pod, or
    None: the cheap half of ``gang_of``, all the mutating webhook needs to name the PodGroup.

    On every pod creation: written for few Python calls (each costs more than the rest of a step).
    """
    labels = metadata.labels or EMPTY_MAP
    annotations = metadata.annotations or EMPTY_MAP
    for source in _sources_for(_SOURCE_LABELS.intersection(labels), _SOURCE_ANNOTATIONS.intersection(annotations)):
        found = source(labels, annotations, metadata)
        if found is not None:
            return None if found is NO_GANG else found
    # The Job rule goes by the owner reference, which every other source outranks.
    return _job(labels, annotations, metadata)


def gang_of(metadata: ObjectMeta, namespace: str, policy: AdmissionPolicy) -> Gang | None:
    """``infer_gang`` for a pod whose metadata the caller already holds."""
    found = claim_of(metadata)
    if found is None:
        return None
    raw_name, source_name, min_count, owner = found
    annotations = metadata.annotation_map
    if min_count is None and annotations:
        # gangweb's annotation also sizes gangs found by other sources (e.g. an elastic Job).
        min_count = positive_int(annotations.get(L.MIN_COUNT_ANNOTATION))
    disruption = annotations.get(L.DISRUPTION_MODE_ANNOTATION) if annotations else None
    if disruption not in DISRUPTION_MODES:
        disruption = policy.disruption_mode_for(namespace)
    mode = policy.mode_for(namespace)
    return Gang(podgroup_name(raw_name), source_name, min_count, owner, disruption, mode, raw_name)

