"""The API test server serves the queue managers' kinds in their real shapes (docs/queues.md): what a queue
fixture loads comes back from its collection, and the read model reads it as it read the file."""

from __future__ import annotations

import json
import urllib.request

import pytest

from kubetestserver import KubeTestServer
from scheduler.engine import parse_snapshot
from scheduler.queues import read_queues
from tests.scheduler.queues.conftest import load_objects


def _list(server, path: str) -> list[dict]:
    with urllib.request.urlopen(server.url + path, timeout=10) as answer:
        body = json.loads(answer.read())
    kind = body["kind"][: -len("List")]
    return [{**item, "kind": kind, "apiVersion": body["apiVersion"]} for item in body["items"]]


@pytest.mark.parametrize(
    ("fixture", "paths"),
    [
        (
            "kueue",
            [
                "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
                "/apis/kueue.x-k8s.io/v1beta2/cohorts",
                "/apis/kueue.x-k8s.io/v1beta2/localqueues",
                "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
                "/apis/kueue.x-k8s.io/v1beta2/workloads",
            ],
        ),
        (
            "volcano",
            ["/apis/scheduling.volcano.sh/v1beta1/queues", "/apis/scheduling.volcano.sh/v1beta1/podgroups"],
        ),
        ("kai", ["/apis/scheduling.run.ai/v2/queues", "/apis/scheduling.run.ai/v2alpha2/podgroups"]),
        ("yunikorn", ["/api/v1/configmaps"]),
    ],
)
def test_served_queue_objects_read_as_the_file(fixture, paths):
    objects = load_objects(fixture)
    with KubeTestServer() as server:
        _, skipped = server.store.load(objects)
        assert not skipped, skipped
        served = _list(server, "/api/v1/nodes") + _list(server, "/api/v1/pods")
        for path in paths:
            served += _list(server, path)
    from_file = read_queues(objects, parse_snapshot(objects)).to_dict()
    from_server = read_queues(served, parse_snapshot(served)).to_dict()
    assert from_server == from_file and from_file["queues"]
