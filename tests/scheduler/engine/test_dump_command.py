"""The snapshot contract's dump command is one string: the engine's ``DUMP_COMMAND``. It names a resource for
every kind the engine parses, and README and docs/design.md print exactly it (the what-if page too:
tests/gangweb/test_dashboard.py)."""

from __future__ import annotations

import pytest

from scheduler.engine import DUMP_COMMAND
from scheduler.engine.snapshot import _PARSERS
from tests.conftest import ROOT

# kubectl's names for the kinds (plural or short name, as the dump writes them).
RESOURCE = {
    "Node": "nodes",
    "Pod": "pods",
    "PodGroup": "podgroups",
    "CompositePodGroup": "compositepodgroups",
    "Workload": "workloads",
    "PodDisruptionBudget": "pdb",
    "PriorityClass": "priorityclasses",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses",
}


def test_the_command_names_every_kind_the_engine_reads():
    program, verb, resources, *flags = DUMP_COMMAND.split()
    assert (program, verb, flags) == ("kubectl", "get", ["-A", "-o", "yaml"])
    assert set(resources.split(",")) == {RESOURCE[kind] for kind in _PARSERS}


@pytest.mark.parametrize("doc", ["README.md", "docs/design.md"])
def test_the_docs_print_the_command(doc):
    assert f"`{DUMP_COMMAND}`" in (ROOT / doc).read_text()
