"""The test server is tested through the official client: the same fixtures as the adapter's tests."""

from tests.scheduler.kube.conftest import api, cluster, core, kubeconfig, server  # noqa: F401 (pytest fixtures)
