"""A client generated from the served schema with openapi-python-client (pinned in the test extras), as an
API user would make one: every module imports, and every operation is called through it against the API (in
process, WSGI) and answers what the schema says, parsed into the client's own models."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from gangweb.wsgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PACKAGE = "gangweb_api_client"
ACTIONS = {"requests_approve_create", "requests_reject_create", "requests_cancel_create"}


@pytest.fixture
def generated(tmp_path, admin):
    """The client package generated from ``/api/schema/`` (the document the server serves, signed in)."""
    from django.test import Client

    where = tmp_path
    document = Client().get("/api/schema/", **admin)
    assert document.status_code == 200, document.content[:300]
    (where / "schema.yaml").write_bytes(document.content)
    generator = Path(sys.executable).parent / "openapi-python-client"
    done = subprocess.run(
        [str(generator), "generate", "--path", str(where / "schema.yaml"), "--meta", "none"]
        + ["--output-path", str(where / PACKAGE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout, done.stdout  # nothing of the document was left out
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def endpoint_modules(package) -> dict[str, object]:
    api = importlib.import_module(f"{package.__name__}.api")
    found = {}
    for info in pkgutil.walk_packages(api.__path__, f"{api.__name__}."):
        module = importlib.import_module(info.name)  # every module imports
        if hasattr(module, "sync_detailed"):
            found[info.name.rpartition(".")[2]] = module
    return found


# Path parameters other than team-a's gang, and answers other than 200 (a sink made, then removed last).
PATHS = {
    "nodes_retrieve": {"name": "node-4"},
    "queues_retrieve": {"system": "kueue", "name": "shared"},
    "notify_sinks_retrieve": {"name": "ops"},
    "notify_sinks_destroy": {"name": "ops"},
}
STATUS = {"notify_sinks_create": {201}, "notify_sinks_destroy": {204}}


def test_every_call_of_the_generated_client_is_answered_as_documented(generated, world, admin, settings):
    settings.GANGWEB_NOTIFY_ALLOWED_HOSTS = ["sink.example"]
    models = importlib.import_module(f"{generated.__name__}.models")
    for info in pkgutil.walk_packages(models.__path__, f"{models.__name__}."):
        importlib.import_module(info.name)
    client = generated.AuthenticatedClient(base_url="http://localhost", token="unused")
    client.set_httpx_client(
        httpx.Client(
            base_url="http://localhost",
            transport=httpx.WSGITransport(app=application),
            headers={"Authorization": admin["HTTP_AUTHORIZATION"]},
        )
    )
    ids = {
        "requests": world.requests["team-a"].pk,
        "plans": world.plans["team-a"].pk,
        "evictions": world.evictions["team-a"].pk,
        "ledger": world.entries["team-a"].pk,
    }
    bodies = {
        "simulate_create": lambda: models.LabSimulateBodyRequest(pod_group="team-a/train"),
        "simulate_podgroups_create": lambda: models.SnapshotBodyRequest(),
        "notify_sinks_create": lambda: models.SinkInRequest.from_dict(
            {
                "name": "ops",
                "kind": "cloudevents",
                "url": "https://sink.example/hook",
                "route": {"allNamespaces": True},
            }
        ),
    }
    modules = endpoint_modules(generated)
    assert len(modules) >= 19, sorted(modules)
    answered = {}
    for name, module in sorted(modules.items(), key=lambda item: (item[0].endswith("_destroy"), item[0])):
        arguments = {"client": client}
        for parameter in inspect.signature(module.sync_detailed).parameters.values():
            if parameter.name == "id":
                arguments["id"] = ids[name.partition("_")[0]]
            elif parameter.name == "body":
                arguments["body"] = bodies[name]()
            elif parameter.kind is parameter.POSITIONAL_OR_KEYWORD:  # a path parameter: team-a's gang
                path = PATHS.get(name, {"namespace": "team-a", "name": "train"})
                arguments[parameter.name] = path[parameter.name]
        answer = module.sync_detailed(**arguments)
        expected = (
            {200, 409} if name in ACTIONS else STATUS.get(name, {200})
        )  # 409: an action in the wrong state
        assert answer.status_code in expected, (name, answer.status_code, answer.content[:500])
        if answer.status_code != 204:  # parsed into the client's model
            assert answer.parsed is not None, (name, answer.content[:500])
        assert not isinstance(answer.parsed, models.Problem) or answer.status_code == 409, name
        answered[name] = answer.status_code
    assert set(answered) == set(modules)
