"""API discovery answers (``/version``, ``/api``, ``/apis``, group versions) for the served resources.

Typed client calls do not need them; ``kubectl`` and the dynamic client do.
"""

from __future__ import annotations

from typing import Any

from scheduler.kube.resources import RESOURCES

VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0-gangweb-testserver",
    "platform": "linux/amd64",
}


# The short names the real API server advertises, so `kubectl get pdb,pc,...` resolves as against a cluster.
SHORT_NAMES = {
    ("", "nodes"): ["no"],
    ("", "pods"): ["po"],
    ("", "events"): ["ev"],
    ("events.k8s.io", "events"): ["ev"],
    ("policy", "poddisruptionbudgets"): ["pdb"],
    ("scheduling.k8s.io", "priorityclasses"): ["pc"],
}


def _group_versions() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    return groups


def _resource_list(group: str, version: str) -> dict[str, Any]:
    entries = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        entries.append(
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                **(
                    {"shortNames": SHORT_NAMES[(group, r.plural)]}
                    if SHORT_NAMES.get((group, r.plural))
                    else {}
                ),
            }
        )
        if r.has_status:
            entries.append(
                {
                    "name": f"{r.plural}/status",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if r.plural == "pods" and not r.group:
            entries.append(
                {
                    "name": "pods/eviction",
                    "singularName": "",
                    "namespaced": True,
                    "group": "policy",
                    "version": "v1",
                    "kind": "Eviction",
                    "verbs": ["create"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }


def handle(path: str, host: str) -> dict[str, Any] | None:
    """The discovery document for ``path``, or None when it is not a discovery path."""
    path = path.rstrip("/")
    if path == "/version":
        return VERSION
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        }
    if path == "/api/v1":
        return _resource_list("", "v1")
    groups = _group_versions()
    if path == "/apis":
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
                for g, vs in sorted(groups.items())
            ],
        }
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "apis" and parts[3] in groups.get(parts[2], []):
        return _resource_list(parts[2], parts[3])
    return None
