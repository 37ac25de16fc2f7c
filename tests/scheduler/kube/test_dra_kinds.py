"""The adapter lists and watches the DRA kinds (read only) from the test server, and the engine plans
from what it lists exactly as from the snapshot file."""

import yaml

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.dra import builders as dra
from scheduler.kube import KubeCluster
from scheduler.kube.resources import RESOURCE_SLICES, SNAPSHOT_RESOURCES
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "engine" / "dra-gpus.yaml"
DRA_KINDS = {"ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate"}


def test_the_snapshot_lists_every_dra_kind():
    assert {r.kind for r in SNAPSHOT_RESOURCES} >= DRA_KINDS


def test_the_adapter_snapshot_of_a_dra_cluster_plans_like_the_file(tmp_path):
    from kubetestserver import KubeTestServer
    from kubetestserver.validation import schema_validator

    with KubeTestServer(bookmark_interval=0.2) as server:
        server.store.validator = schema_validator()  # every DRA object is a valid 1.37 object
        server.load_file(FIXTURE)
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        with KubeCluster.from_kubeconfig(kubeconfig, timeout=(2.0, 5.0), watch_timeout=30) as cluster:
            objects = cluster.start().snapshot_objects()
            kinds = {o["kind"]: o["apiVersion"] for o in objects}
            assert {k: kinds[k] for k in DRA_KINDS} == dict.fromkeys(DRA_KINDS, "resource.k8s.io/v1")
            from_server = plan(parse_snapshot(objects), "ml/train").to_dict()
            from_file = plan(parse_snapshot([yaml.safe_load(FIXTURE.read_text())]), "ml/train").to_dict()
            # Lost work runs with each snapshot's own now (the server stamps what it stores): the rest is equal.
            for each in (from_server, from_file):
                assert all(v.pop("lostGpuSeconds") >= 0 for v in each["victims"])
            assert from_server == from_file and from_server["outcome"] == "preempt"
            # Served like the other kinds: get by name through the official client too.
            from kubernetes import client, config

            api = config.new_client_from_config(config_file=str(kubeconfig))
            try:
                resource = client.ResourceV1Api(api)
                assert resource.read_device_class("gpu.nvidia.com").metadata.name == "gpu.nvidia.com"
                claim = resource.read_namespaced_resource_claim("sweep-0-gpus-x7k2p", "ml")
                assert claim.status.reserved_for[0].name == "sweep-0"
            finally:
                api.close()
            # A third node publishes its GPUs: the watch brings the slice in.
            server.store.create(RESOURCE_SLICES, dra.resource_slice("dra-3", 8))
            assert cluster.wait_for(
                lambda objs: any(
                    o["kind"] == "ResourceSlice" and o["spec"].get("nodeName") == "dra-3" for o in objs
                ),
                10,
            )
