"""Fixtures for the PodGroup ensurer tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def demo(settings):
    """Pods go through the webhook's views in this process, which answers those paths only in the demo
    (tests/admission/test_dashboard_paths.py); the API test server stands in for the cluster."""
    settings.DEMO = True
