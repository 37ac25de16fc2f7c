"""Which gang (PodGroup) a pod belongs to, inferred from the pod alone.

Sources are tried in the registry's order (``admission.sources``: one module per source): gangweb's own
label, then the labels/annotations of other gang schedulers (so clusters migrate without editing
workloads), then the labels that workload controllers put on their pods. The pod's existing ``spec.schedulingGroup`` is *not* looked at here:
``mutate`` leaves such pods alone, and the controller side can call ``infer_gang`` on an admitted pod
and get the same answer the webhook got.

It reads the typed pod views of ``admission.podview``; label and annotation maps are dicts of strings.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from admission import labels as L
from admission.names import is_dns1123_subdomain
from admission.podview import EMPTY_MAP, ObjectMeta, Pod, readable_pod
from admission.policy import DISRUPTION_MODES, AdmissionPolicy
from admission.sources import NO_GANG, SOURCES, Claim, OwnerRef
from admission.sources.base import ClaimRule, positive_int

__all__ = ["Gang", "OwnerRef", "claim_of", "gang_of", "infer_gang", "podgroup_name"]


@dataclass(slots=True)
class Gang:
    name: str  # the PodGroup name, a valid DNS subdomain
    source: str  # which rule found it, e.g. "jobset", "kueue"
    min_count: (
        int | None
    )  # None: read it from ``owner`` (the source's size rule: podgroups.resolve_min_count)
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


# The sources that start from label or annotation keys, in the registry's order; the keys of a pod's maps
# that start any source are found by one set intersection each, and the sources they start, in order, are
# worked out once per combination. Sources without keys (the Job: its owner reference) come after them.
_TRIGGERED = tuple(source for source in SOURCES if source.labels or source.annotations)
_KEYLESS_CLAIMS = tuple(source.claim for source in SOURCES if not (source.labels or source.annotations))
_SOURCE_LABELS = frozenset().union(*(source.labels for source in _TRIGGERED))
_SOURCE_ANNOTATIONS = frozenset().union(*(source.annotations for source in _TRIGGERED))
_LABEL_SOURCE = {key: position for position, source in enumerate(_TRIGGERED) for key in source.labels}
_ANNOTATION_SOURCE = {
    key: position for position, source in enumerate(_TRIGGERED) for key in source.annotations
}
_CLAIMS = tuple(source.claim for source in _TRIGGERED)


@lru_cache(maxsize=1024)  # bounded: the key sets come from untrusted pods
def _claims_for(label_keys: frozenset[str], annotation_keys: frozenset[str]) -> tuple[ClaimRule, ...]:
    positions = {_LABEL_SOURCE[key] for key in label_keys} | {
        _ANNOTATION_SOURCE[key] for key in annotation_keys
    }
    return tuple(_CLAIMS[position] for position in sorted(positions)) + _KEYLESS_CLAIMS


def infer_gang(pod: Pod | dict[str, Any], namespace: str, policy: AdmissionPolicy) -> Gang | None:
    """The gang ``pod`` belongs to, or None when no source claims it (or ``pod`` is not a Pod's shape)."""
    view = readable_pod(pod)
    return gang_of(view.metadata, namespace, policy) if view is not None else None


def claim_of(metadata: ObjectMeta) -> Claim | None:
    """The claim of the first source that recognises the pod, or None: the cheap half of ``gang_of``, all
    the mutating webhook needs to name the PodGroup.

    On every pod creation: written for few Python calls (each costs more than the rest of a step).
    """
    labels = metadata.labels or EMPTY_MAP
    annotations = metadata.annotations or EMPTY_MAP
    for claim in _claims_for(
        _SOURCE_LABELS.intersection(labels), _SOURCE_ANNOTATIONS.intersection(annotations)
    ):
        found = claim(labels, annotations, metadata)
        if found is not None:
            return None if found is NO_GANG else found
    return None


def gang_of(metadata: ObjectMeta, namespace: str, policy: AdmissionPolicy) -> Gang | None:
    """``infer_gang`` for a pod whose metadata the caller already holds."""
    found = claim_of(metadata)
    if found is None:
        return None
    min_count = found.min_count
    annotations = metadata.annotation_map
    if min_count is None and annotations:
        # gangweb's annotation also sizes gangs found by other sources (e.g. an elastic Job).
        min_count = positive_int(annotations.get(L.MIN_COUNT_ANNOTATION))
    disruption = annotations.get(L.DISRUPTION_MODE_ANNOTATION) if annotations else None
    if disruption not in DISRUPTION_MODES:
        disruption = policy.disruption_mode_for(namespace)
    mode = policy.mode_for(namespace)
    return Gang(
        podgroup_name(found.raw_name), found.source, min_count, found.owner, disruption, mode, found.raw_name
    )
