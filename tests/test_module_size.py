"""The house rule of docs/ARCHITECTURE.md: no product module over 400 lines. A module that grows past it
holds two concerns; split it where they part. Migrations are generated and the test server
(``kubetestserver/``) is test tooling, not product."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

LIMIT = 400
PRODUCT = ("admission", "gangweb", "scheduler")


def product_modules():
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_the_scan_sees_the_product():
    names = {str(path.relative_to(ROOT)) for path in product_modules()}
    assert {"gangweb/settings.py", "scheduler/engine/snapshot.py", "admission/handler.py"} <= names


@pytest.mark.parametrize("package", PRODUCT)
def test_no_product_module_is_over_the_limit(package):
    long = {
        str(path.relative_to(ROOT)): lines
        for path in product_modules()
        if path.relative_to(ROOT).parts[0] == package
        and (lines := len(path.read_text().splitlines())) > LIMIT
    }
    assert not long, f"over {LIMIT} lines: {long}; split each where its concerns part"
