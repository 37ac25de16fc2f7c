"""The one reading of a raw pod's state (scheduler/podstate.py) that detection, the re-check, the ensurer and
the dashboard share."""

from __future__ import annotations

from scheduler import podstate


def pod(*, node="", phase="Pending", deleting=False, group="g", namespace="ns"):
    meta = {"name": "p", "namespace": namespace}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec = {"nodeName": node} if node else {}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def test_pending_means_live_and_unbound():
    assert podstate.is_pending(pod())
    assert not podstate.is_pending(pod(node="n1", phase="Running"))
    assert not podstate.is_pending(pod(deleting=True))
    assert not podstate.is_pending(pod(phase="Failed"))
    assert not podstate.is_pending(pod(phase="Succeeded"))


def test_live_and_bound():
    assert podstate.is_live(pod(node="n1", phase="Running"))
    assert not podstate.is_live(pod(node="n1", deleting=True))
    assert podstate.is_bound(pod(node="n1")) and not podstate.is_bound(pod())
    assert podstate.is_finished(pod(phase="Succeeded")) and not podstate.is_finished(pod())


def test_group_name_and_key():
    assert podstate.group_name(pod()) == "g" and podstate.gang_key_of_pod(pod()) == "ns/g"
    assert podstate.group_name(pod(group="")) is None and podstate.gang_key_of_pod(pod(group="")) is None


def test_pending_of_picks_the_groups_pending_pods_only():
    objects = [
        pod(),
        pod(node="n1"),
        pod(group="other"),
        pod(namespace="elsewhere"),
        {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}},
    ]
    assert podstate.pending_of(objects, "ns", "g") == [objects[0]]
