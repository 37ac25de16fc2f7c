"""schemathesis against the v1 schema, in process (WSGI), authenticated as an admin (Basic) and as a
team-a viewer (a gangweb token): no 5xx, every answer conforms to the schema (status code, content
type, headers, body).

One test walks every operation of the document (so a new endpoint is covered), each with a few
generated requests, on one two-tenant world with real ledger rows: about a minute on this machine.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from gangweb.wsgi import application
from tests.gangweb.api.v1.conftest import basic

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def schema_valid_data_is_accepted(ctx, response, case):
    """schemathesis' positive-data acceptance: a request the schema allows is not a 400. One allowance: the
    objects of an inline snapshot are read by the engine's contract (docs/design.md "snapshot files"), which
    the schema names but does not spell out, so a 400 naming ``snapshot`` alone, for a body that has one,
    is the engine refusing an object it was given."""
    snapshot_refused = (
        set(response.json().get("errors", {})) == {"snapshot"} if response.status_code == 400 else False
    )
    if snapshot_refused and isinstance(case.body, dict) and "snapshot" in case.body:
        return None
    return checks.positive_data_acceptance(ctx, response, case)


CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
    schema_valid_data_is_accepted,
]
EXAMPLES_PER_OPERATION = 15


def test_the_api_answers_as_its_schema_says(world, admin, a_viewer):
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/",
        application,
        headers={"Authorization": basic("ops", "s3cret-enough")["HTTP_AUTHORIZATION"]},
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19
    # an admin signing in with Basic, and a team-a viewer with its gangweb token (Bearer); the in-process
    # WSGI client does not decompress, so the answers are asked for uncompressed (map/ gzips when asked)
    readers = (
        {**basic("ops", "s3cret-enough"), "Accept-Encoding": "identity"},
        {"Authorization": a_viewer["HTTP_AUTHORIZATION"], "Accept-Encoding": "identity"},
    )
    tried, failures = {}, {}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case):
            for headers in readers:
                case.call_and_validate(headers=headers, checks=CHECKS)
            tried[case.operation.label] = tried.get(case.operation.label, 0) + 1

        try:
            conforms()
        except (
            Exception,
            BaseExceptionGroup,
        ) as exc:  # every operation is tried; all their failures are shown together
            failures[operation.label] = str(exc)[:2000]
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())
    assert len(tried) == len(operations), set(o.label for o in operations) - set(tried)


def test_the_schema_is_built_without_a_warning(tmp_path):
    """drf-spectacular warns where the document would be wrong (two components of one name, a field or
    an authentication class it cannot describe); each would be an error in the schema clients read."""
    from django.core.management import call_command

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--fail-on-warn", "--file", str(out))
    document = out.read_text()
    for scheme in ("gangwebToken", "kubernetesToken", "basic", "session"):
        assert f"- {scheme}: []" in document, scheme


def test_the_root_endpoint_is_described_in_its_own_words(tmp_path):
    """Without its own docstring an endpoint is described by the nearest base class's (an internal mixin's)."""
    import yaml
    from django.core.management import call_command

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--file", str(out))
    root = yaml.safe_load(out.read_text())["paths"]["/api/v1/"]["get"]
    assert root["description"] == "Where every list of the API v1 is: its name and its URL."
