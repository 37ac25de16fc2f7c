from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def namespace(real_cluster):
    """A namespace of the test's own on the real cluster, deleted after it."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    real_cluster.run("create", "namespace", name)
    yield name
    real_cluster.run("delete", "namespace", name, "--wait=false", check=False)
