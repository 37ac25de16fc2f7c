from __future__ import annotations

import pytest
from kubernetes import client, config

from kubetestserver import KubeTestServer
from kubetestserver.validation import schema_validator
from scheduler.kube import KubeCluster

from .objects import small_cluster


@pytest.fixture
def server():
    with KubeTestServer(bookmark_interval=0.2) as srv:
        srv.load(small_cluster())  # valid objects (test_end_to_end checks them once)
        # from here on every object written (by the adapter above all) must be a valid 1.37 object
        srv.store.validator = schema_validator()
        yield srv


@pytest.fixture
def kubeconfig(server, tmp_path):
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api(kubeconfig):
    """The official client, configured only through the kubeconfig file."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield api_client
    api_client.close()


@pytest.fixture
def core(api):
    return client.CoreV1Api(api)


@pytest.fixture
def cluster(kubeconfig):
    kube = KubeCluster.from_kubeconfig(kubeconfig, timeout=(2.0, 5.0), watch_timeout=30)
    yield kube
    kube.close()
