"""ResourceClaims shared by a PodGroup (KEP-5729, ``DRAWorkloadResourceClaims``): the PodGroup's entries
and the pod entries that are meant to share them.

The 1.37 rule: a pod shares the claim of an entry of its PodGroup's ``spec.resourceClaims`` when an
entry of its own ``spec.resourceClaims`` matches that entry exactly: the same ``name``, and the same
``resourceClaimName`` or ``resourceClaimTemplateName``. Any other entry is the pod's own claim (a
template then makes one claim per pod). Kubernetes accepts a near miss silently, and the gang then runs
on separate devices where it meant to share one allocation; here:

- an entry with the name of a PodGroup claim but another source is denied: the pod asks for the group's
  claim by its name and would get a claim of its own instead;
- an entry that repeats a PodGroup claim's source under another name is allowed with a warning: from a
  template, every pod of the gang gets its own claim where the PodGroup could share one; a named
  ResourceClaim is reserved for the pod apart from its group.

Pure: the PodGroup's entries come from ``state.PodGroupCache`` (the API server's view), the pod's from
the review.
"""

from __future__ import annotations

from typing import Any

from admission.names import is_dns1123_label, is_dns1123_subdomain

MAX_RESOURCE_CLAIMS = 4  # PodGroup and PodGroupTemplate spec.resourceClaims (+k8s:maxItems=4)
SOURCES = ("resourceClaimName", "resourceClaimTemplateName")
# (name, resourceClaimName or "", resourceClaimTemplateName or ""): one entry, as both sides are compared.
ClaimEntry = tuple[str, str, str]


def make_entry(name: Any, claim: Any, template: Any) -> ClaimEntry | None:
    """An entry as a comparable triple; None for one the API would not hold (no name, not one source)."""
    if not isinstance(name, str) or not name:
        return None
    claim, template = (value if isinstance(value, str) else "" for value in (claim, template))
    return (name, claim, template) if bool(claim) != bool(template) else None


def entry_of(raw: Any) -> ClaimEntry | None:
    """``make_entry`` of an entry as JSON (a PodGroup's)."""
    if not isinstance(raw, dict):
        return None
    return make_entry(raw.get("name"), raw.get(SOURCES[0]), raw.get(SOURCES[1]))


def group_entries(claims: Any) -> tuple[ClaimEntry, ...]:
    """The well-formed entries of a PodGroup's ``spec.resourceClaims`` (what ``PodGroupCache`` keeps)."""
    if not isinstance(claims, list):
        return ()
    # The API server holds at most 4; a longer list (a test's, a forged one) is cut, not walked whole.
    return tuple(entry for entry in map(entry_of, claims[:MAX_RESOURCE_CLAIMS]) if entry is not None)


def check_group_claims(claims: Any, where: str) -> list[str]:
    """The API's rules for a PodGroup's (or a PodGroupTemplate's) ``resourceClaims``."""
    if claims is None:
        return []
    if not isinstance(claims, list):
        return [f"{where}.resourceClaims is {type(claims).__name__}; make it a list of claims"]
    problems = []
    if len(claims) > MAX_RESOURCE_CLAIMS:
        problems.append(
            f"{where}.resourceClaims has {len(claims)} entries; at most {MAX_RESOURCE_CLAIMS} are allowed"
        )
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        at = f"{where}.resourceClaims[{index}]"
        if not isinstance(claim, dict):
            problems.append(f"{at} is {type(claim).__name__}; give a name and one claim source")
            continue
        name = claim.get("name")
        if not is_dns1123_label(name):
            problems.append(f"{at}.name is {name!r}; use a DNS label (lowercase letters, digits, '-', <= 63)")
        elif name in seen:
            problems.append(f"{at}.name {name!r} is used twice; give each claim its own name")
        else:
            seen.add(name)
        present = [key for key in SOURCES if claim.get(key) is not None]
        if len(present) != 1:
            problems.append(
                f"{at} sets {' and '.join(present) or 'neither source'}; set exactly one of "
                "resourceClaimName or resourceClaimTemplateName"
            )
        elif not is_dns1123_subdomain(claim[present[0]]):
            problems.append(
                f"{at}.{present[0]} is {claim[present[0]]!r}; name an object (a DNS subdomain: lowercase "
                "letters, digits, '-' and '.', <= 253)"
            )
    return problems


def _source(entry: ClaimEntry) -> str:
    return f"ResourceClaim {entry[1]}" if entry[1] else f"ResourceClaimTemplate {entry[2]}"


def _field(entry: ClaimEntry) -> str:
    return f"{SOURCES[0]}: {entry[1]}" if entry[1] else f"{SOURCES[1]}: {entry[2]}"


def pod_claim_findings(
    pod_claims: list[ClaimEntry | None], group: str, shared: tuple[ClaimEntry, ...]
) -> tuple[list[str], list[str]]:
    """(problems, warnings) of a pod's ``spec.resourceClaims`` against its PodGroup's shared entries."""
    problems: list[str] = []
    warnings: list[str] = []
    if not shared:
        return problems, warnings
    by_name = {entry[0]: entry for entry in shared}
    for index, entry in enumerate(pod_claims):
        if entry is None or entry in shared:
            continue  # malformed (the API server refuses it) or an exact match: the group's claim
        at = f"spec.resourceClaims[{index}]"
        named = by_name.get(entry[0])
        if named is not None:
            problems.append(
                f"{at} ({entry[0]!r}) has the name of PodGroup {group}'s claim but names {_source(entry)}, "
                f"where the PodGroup's names {_source(named)}, so the pod would get a claim of its own "
                f"instead of the group's; copy the PodGroup's entry exactly (name: {named[0]}, "
                f"{_field(named)}) or give this entry another name"
            )
            continue
        same_source = next((g for g in shared if g[1:] == entry[1:]), None)
        if same_source is None:
            continue  # a claim of the pod's own, unrelated to the group's
        if entry[2]:
            warnings.append(
                f"gangweb: {at} ({entry[0]!r}) makes a claim for this pod alone from {_source(entry)}, which "
                f"PodGroup {group} shares as {same_source[0]!r}: each pod of the gang gets devices of its own. "
                f"To share the group's allocation, name the entry {same_source[0]!r}"
            )
        else:
            warnings.append(
                f"gangweb: {at} ({entry[0]!r}) names {_source(entry)}, which PodGroup {group} shares as "
                f"{same_source[0]!r}: it is reserved for this pod apart from the group. Name the entry "
                f"{same_source[0]!r} to use the group's reservation"
            )
    return problems, warnings
