"""An in-memory cluster for the ensurer tests: objects keyed by apiVersion, kind, namespace and name (two
kinds called PodGroup, e.g. coscheduling's and scheduling.k8s.io's, live side by side, as on a cluster)."""

from __future__ import annotations

import copy

from scheduler.cluster import KubeObject


def _key(api_version: str, kind: str, namespace: str | None, name: str) -> tuple[str, str, str, str]:
    return api_version, kind, namespace or "", name


class MemoryCluster:
    name = "memory"

    def __init__(self, objects: list[KubeObject]):
        self.objects = {}
        self.creates: list[KubeObject] = []  # every create_object call, accepted or not
        for obj in objects:
            self.create_object(obj)
        self.creates.clear()

    def snapshot_objects(self) -> list[KubeObject]:
        return copy.deepcopy(list(self.objects.values()))

    def get_object(self, api_version: str, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        return copy.deepcopy(self.objects.get(_key(api_version, kind, namespace, name)))

    def create_object(self, obj: KubeObject) -> bool:
        meta = obj["metadata"]
        key = _key(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])
        self.creates.append(copy.deepcopy(obj))
        if key in self.objects:
            return False
        self.objects[key] = copy.deepcopy(obj)
        return True
