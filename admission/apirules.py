"""The scheduling.k8s.io/v1beta1 rules for PodGroups and Workloads, with messages that say what to change.

The apiserver enforces these too; checking them at admission gives the author one readable message
naming the field and the fix, instead of a terse validation error (or, for a gang that can never be
met, a group that waits forever). Rules from the 1.37 API (kubernetes/api scheduling/v1beta1/types.go,
as described in the kubernetes-validate 1.37.0 schemas).
"""

from __future__ import annotations

from typing import Any

from admission.claims import check_group_claims
from admission.names import is_dns1123_label

MAX_TEMPLATES = 8
MAX_TOPOLOGY_CONSTRAINTS = 1
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
# Fields the API fixes at creation (PodGroup spec and PodGroupTemplate); minCount stays mutable.
IMMUTABLE_PODGROUP_FIELDS = (
    "workloadRef",
    "disruptionMode",
    "schedulingConstraints",
    "resourceClaims",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "parentCompositePodGroupName",
)
IMMUTABLE_TEMPLATE_FIELDS = (
    "disruptionMode",
    "schedulingConstraints",
    "resourceClaims",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _policy_kind(policy: Any) -> str | None:
    keys = [key for key in ("basic", "gang") if _dict(policy).get(key) is not None]
    return keys[0] if len(keys) == 1 else None


def check_group_spec(spec: dict[str, Any], where: str) -> list[str]:
    """Problems in a PodGroup spec or a PodGroupTemplate (they share these fields)."""
    problems: list[str] = []
    policy = spec.get("schedulingPolicy")
    set_keys = [key for key in ("basic", "gang") if _dict(policy).get(key) is not None]
    if len(set_keys) != 1:
        problems.append(
            f"{where}.schedulingPolicy sets {' and '.join(set_keys) or 'nothing'}; set exactly one: "
            "gang: {minCount: N} for all-or-nothing placement, or basic: {} for plain scheduling"
        )
    elif set_keys == ["gang"]:
        min_count = _dict(_dict(policy).get("gang")).get("minCount")
        if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
            problems.append(
                f"{where}.schedulingPolicy.gang.minCount is {min_count!r}; set a whole number >= 1"
            )
    mode = spec.get("disruptionMode")
    if mode is not None:
        modes = [key for key in ("single", "all") if _dict(mode).get(key) is not None]
        if len(modes) != 1:
            problems.append(
                f"{where}.disruptionMode sets {' and '.join(modes) or 'nothing'}; set exactly one: "
                "all: {} (evict the group as a unit) or single: {}"
            )
    topology = _dict(spec.get("schedulingConstraints")).get("topology") or []
    if isinstance(topology, list):
        if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
            problems.append(
                f"{where}.schedulingConstraints.topology has {len(topology)} entries; keep one topology key"
            )
        for index, constraint in enumerate(topology):
            if not isinstance(_dict(constraint).get("key"), str) or not _dict(constraint)["key"]:
                problems.append(
                    f"{where}.schedulingConstraints.topology[{index}].key is missing; name a node label"
                )
    problems += check_group_claims(spec.get("resourceClaims"), where)
    policy_name = spec.get("preemptionPolicy")
    if policy_name is not None and policy_name not in PREEMPTION_POLICIES:
        problems.append(f"{where}.preemptionPolicy is {policy_name!r}; use Never or PreemptLowerPriority")
    return problems


def _changed_fields(old: dict[str, Any], new: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    return [name for name in fields if old.get(name) != new.get(name)]


def check_podgroup(podgroup: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    spec = _dict(podgroup.get("spec"))
    if not spec:
        return ["PodGroup has no spec; set spec.schedulingPolicy (gang: {minCount: N} or basic: {})"]
    problems = check_group_spec(spec, "spec")
    if old is not None:
        old_spec = _dict(old.get("spec"))
        for name in _changed_fields(old_spec, spec, IMMUTABLE_PODGROUP_FIELDS):
            problems.append(f"spec.{name} is immutable; put it back, or delete and recreate the PodGroup")
        old_kind, new_kind = (
            _policy_kind(old_spec.get("schedulingPolicy")),
            _policy_kind(spec.get("schedulingPolicy")),
        )
        if old_kind and new_kind and old_kind != new_kind:
            problems.append(
                f"spec.schedulingPolicy changed from {old_kind} to {new_kind}; the policy is fixed at "
                "creation (only gang.minCount may change): recreate the PodGroup"
            )
    return problems


def _templates(spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = spec.get(key)
    return [_dict(item) for item in value] if isinstance(value, list) else []


def check_workload(workload: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    spec = _dict(workload.get("spec"))
    plain, composite = spec.get("podGroupTemplates"), spec.get("compositePodGroupTemplates")
    if bool(plain) == bool(composite):
        return [
            "Workload spec sets "
            + ("both podGroupTemplates and compositePodGroupTemplates" if plain else "no templates")
            + "; set exactly one of them"
        ]
    key = "podGroupTemplates" if plain else "compositePodGroupTemplates"
    templates = _templates(spec, key)
    problems: list[str] = []
    if len(templates) > MAX_TEMPLATES:
        problems.append(
            f"spec.{key} has {len(templates)} templates; at most {MAX_TEMPLATES} are allowed: merge some"
        )
    names: set[str] = set()
    for index, template in enumerate(templates):
        where, name = f"spec.{key}[{index}]", template.get("name")
        if not is_dns1123_label(name):
            problems.append(
                f"{where}.name is {name!r}; use a DNS label (lowercase letters, digits, '-', <= 63)"
            )
        elif name in names:
            problems.append(f"{where}.name {name!r} is used twice; template names must be unique")
        else:
            names.add(name)
        if key == "podGroupTemplates":  # composite templates nest their own templates instead
            problems += check_group_spec(template, where)
    if old is not None:
        problems += _workload_update_problems(_dict(old.get("spec")), spec, key, templates)
    return problems


def _workload_update_problems(
    old_spec: dict[str, Any], spec: dict[str, Any], key: str, templates: list[dict[str, Any]]
) -> list[str]:
    problems = []
    if old_spec.get("controllerRef") != spec.get("controllerRef"):
        problems.append("spec.controllerRef is immutable; put it back, or recreate the Workload")
    old_templates = {t.get("name"): t for t in _templates(old_spec, key)}
    new_templates = {t.get("name"): t for t in templates}
    if set(old_templates) != set(new_templates):
        added = sorted(map(str, set(new_templates) - set(old_templates)))
        removed = sorted(map(str, set(old_templates) - set(new_templates)))
        problems.append(
            f"spec.{key} cannot gain or lose templates after creation (added {added}, removed {removed}); "
            "recreate the Workload to change its shape"
        )
    for name, template in new_templates.items():
        if name not in old_templates:
            continue
        for field_name in _changed_fields(old_templates[name], template, IMMUTABLE_TEMPLATE_FIELDS):
            problems.append(f"spec.{key}[name={name}].{field_name} is immutable; put it back")
        old_kind = _policy_kind(old_templates[name].get("schedulingPolicy"))
        new_kind = _policy_kind(template.get("schedulingPolicy"))
        if old_kind and new_kind and old_kind != new_kind:
            problems.append(
                f"spec.{key}[name={name}].schedulingPolicy cannot change from {old_kind} to {new_kind}"
            )
    return problems
