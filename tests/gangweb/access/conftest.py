"""Fixtures of the access tests (the ledger requests of the API tests)."""

from tests.gangweb.api.conftest import make_request  # noqa: F401 (a fixture)
