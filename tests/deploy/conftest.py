from __future__ import annotations

import pytest

from tests.deploy.rendering import COMPOSED, OVERLAYS, build, compose, prepare


@pytest.fixture(scope="session")
def tree(tmp_path_factory):
    """deploy/ with the generated certificates and secrets, plus an operator's kustomization that turns on
    mutual TLS over the self-signed overlay and one that adds the monitoring pack to the observe overlay (every
    component is built by some kustomization)."""
    tree = prepare(tmp_path_factory.mktemp("deploy") / "deploy")
    compose(tree, "self-signed-mtls", ["self-signed"], ["enforce", "mtls"])
    compose(tree, "observe-monitoring", ["observe"], ["monitoring"])
    return tree


@pytest.fixture(scope="session")
def rendered(tree) -> dict[str, list[dict]]:
    """Every overlay (and the composed one) as kubectl's kustomize renders it."""
    return {name: build(tree / "overlays" / name) for name in [*OVERLAYS, *COMPOSED]}
