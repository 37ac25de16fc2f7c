"""``kubectl gangweb`` as a user runs it: the installed console script, in a shell whose kubeconfig names a
Kubernetes user, against a real gangweb web process reading the Kubernetes API test server, which also
answers gangweb's TokenReview and SubjectAccessReview for that user's token (docs/cli.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gangweb import webserver
from kubetestserver import KubeTestServer
from kubetestserver.reviews import mint_token
from tests.conftest import ROOT, migrate_and_run
from tests.gangweb.access.test_kubernetes import READ_PODGROUPS, binding, cluster_role, user

pytestmark = pytest.mark.timeout(300)

SNAPSHOT = ROOT / "tests/fixtures/engine/two-racks.yaml"
PLUGIN = Path(sys.executable).with_name("kubectl-gangweb")
TOKEN = mint_token("alice")  # a service account token's shape: gangweb reviews no made-up shape


def _objects() -> list[dict]:
    return [d for d in yaml.safe_load_all(SNAPSHOT.read_text()) if d]


@pytest.fixture(scope="module")
def gangweb(tmp_path_factory):
    """(gangweb's URL, the kube server, a folder): a web process on the test server's cluster, its ledger
    holding one request of ml/llm-ft; alice may view namespace ml only."""
    tmp_path = tmp_path_factory.mktemp("plugin")
    with KubeTestServer() as server:
        server.load(_objects())
        server.load(
            [cluster_role("gangweb-viewer", READ_PODGROUPS), binding("ml", "gangweb-viewer", user("alice"))]
        )
        server.add_token(TOKEN, "alice", groups=["ml-team"])
        kubeconfig = server.write_kubeconfig(tmp_path / "gangweb-kubeconfig")
        env = {
            **os.environ,
            "GANGWEB_VAR_DIR": str(tmp_path),
            "DATABASE_URL": "",  # the test's own SQLite file, empty
            "REDIS_URL": "",
            "KUBECONFIG": str(kubeconfig),
            "GANGWEB_CLUSTER": "kube",
            "GANGWEB_DEMO": "",
            "SECRET_KEY": "plugin-test-" + "k" * 40,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
        }
        script = (
            "from scheduler.preemption import ledger\n"
            "ledger.open_request('ml', 'llm-ft', mode='enforce', trigger='test: pending')\n"
            "ledger.open_request('web', 'serve', mode='enforce', trigger='test: pending')\n"
        )
        migrate_and_run(env, script, timeout=180)
        port = _free_port()
        proc = webserver.start(port, env, log=(tmp_path / "uvicorn.log").open("wb"))
        try:
            from tests.conftest import wait_for_port

            wait_for_port(port, proc=proc)
            yield f"http://127.0.0.1:{port}", server, tmp_path
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _free_port() -> int:
    from tests.conftest import free_port

    return free_port()


def user_kubeconfig(
    folder: Path,
    server_url: str,
    *,
    gangweb_url: str | None = None,
    token: str = TOKEN,
    credentials: dict | None = None,
) -> Path:
    """The user's kubeconfig, as kubectl reads it: one context, its user a bearer token; gangweb's URL, when
    given, in the context's ``gangweb`` extension."""
    context: dict = {"cluster": "test", "user": "alice", "namespace": "ml"}
    if gangweb_url:
        context["extensions"] = [{"name": "gangweb", "extension": {"server": gangweb_url}}]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server_url}}],
        "users": [{"name": "alice", "user": credentials or {"token": token}}],
        "contexts": [{"name": "alice@test", "context": context}],
        "current-context": "alice@test",
    }
    path = folder / f"user-{abs(hash((gangweb_url, token, json.dumps(credentials))))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def kubectl_gangweb(*args: str, kubeconfig: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("GANGWEB_SERVER", "GANGWEB_TOKEN", "KUBECONFIG")
    }
    return subprocess.run(
        [str(PLUGIN), *args],
        env={**clean, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def alice(gangweb):
    url, server, folder = gangweb
    return user_kubeconfig(folder, server.url, gangweb_url=url)


def test_the_plugin_is_installed_with_the_package():
    assert PLUGIN.exists() or shutil.which("kubectl-gangweb")


def test_pending_lists_the_waiting_gangs_she_may_see_in_every_format(alice):
    as_json = kubectl_gangweb("pending", "-o", "json", kubeconfig=alice)
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert rows and {r["namespace"] for r in rows} == {
        "ml"
    }  # web/serve waits too, in a namespace she cannot see
    names = [r["name"] for r in rows]
    as_yaml = kubectl_gangweb("pending", "-o", "yaml", kubeconfig=alice)
    assert yaml.safe_load(as_yaml.stdout) == rows
    table = kubectl_gangweb("pending", kubeconfig=alice).stdout.splitlines()
    assert table[0].split() == ["POSITION", "NAMESPACE", "NAME", "STAGE", "PRIORITY", "GPUS", "WAITING"]
    assert [line.split()[2] for line in table[1:]] == names
    wide = kubectl_gangweb("pending", "-o", "wide", kubeconfig=alice).stdout.splitlines()
    assert wide[0].split()[-4:] == ["MIN", "PENDING-PODS", "REQUEST", "REASON"]


def test_explain_gives_the_gangs_state_reason_and_verdict(alice):
    done = kubectl_gangweb("explain", "ml/llm-ft", "-o", "json", kubeconfig=alice)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["podGroup"] == "ml/llm-ft" and row["verdict"]["state"] == "pending" and row["reason"]
    wide = kubectl_gangweb("explain", "ml/llm-ft", "-o", "wide", kubeconfig=alice).stdout.splitlines()
    assert wide[0].split()[:3] == ["NAMESPACE", "NAME", "STATE"] and "VERDICT" in wide[0]
    assert wide[1].split()[:2] == ["ml", "llm-ft"] and " pending " in f" {wide[1]} "


def test_plan_and_whatif_are_the_apis_simulation(alice, gangweb):
    plan = kubectl_gangweb("plan", "ml/llm-ft", "--policy", "kep5710", "-o", "json", kubeconfig=alice)
    assert plan.returncode == 0, plan.stderr
    answer = json.loads(plan.stdout)
    assert answer["policy"] == "kep5710" and answer["podGroup"] == "ml/llm-ft" and "cost" in answer
    whatif = kubectl_gangweb(
        "whatif", "ml/llm-ft", "--snapshot", str(SNAPSHOT), "-o", "json", kubeconfig=alice
    )
    assert whatif.returncode == 0, whatif.stderr
    body = json.loads(whatif.stdout)
    assert body["source"] == "snapshot" and [p["policy"] for p in body["plans"]] == [
        "gangweb",
        "kep5710",
        "legacy",
    ]
    table = kubectl_gangweb(
        "whatif", "ml/llm-ft", "--policies", "legacy,gangweb", kubeconfig=alice
    ).stdout.splitlines()
    assert [line.split()[0] for line in table] == ["POLICY", "legacy", "gangweb"]


def test_ledger_shows_her_namespaces_history(alice):
    done = kubectl_gangweb("ledger", "-o", "json", kubeconfig=alice)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows and {r["podGroup"] for r in rows} == {"ml/llm-ft"}
    table = kubectl_gangweb("ledger", "--kind", rows[0]["kind"], kubeconfig=alice).stdout.splitlines()
    assert table[0].split()[:3] == ["ID", "KIND", "PODGROUP"] and table[1].split()[2] == "ml/llm-ft"


def test_gangwebs_url_from_the_flag_or_the_environment(gangweb):
    url, server, folder = gangweb
    bare = user_kubeconfig(folder, server.url)
    assert kubectl_gangweb("pending", "--server", url, kubeconfig=bare).returncode == 0
    assert kubectl_gangweb("pending", kubeconfig=bare, GANGWEB_SERVER=url).returncode == 0
    nowhere = kubectl_gangweb("pending", kubeconfig=bare)
    assert nowhere.returncode == 2 and "no gangweb URL" in nowhere.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("explain", "ml/no-such-gang"), 3, "404"),
        (("explain", "web/serve"), 3, "404"),  # another namespace's gang reads as missing
        (("explain", "no-slash"), 2, "NAMESPACE/NAME"),
        (("pending", "-o", "csv"), 2, "invalid choice"),
        (("ledger", "--limit", "0"), 2, "at least 1"),
        (("ledger", "--kind", "no.such.kind"), 2, "400"),
        (("whatif", "ml/llm-ft", "--policies", "fastest"), 2, "--policies"),
        (("frobnicate",), 2, "invalid choice"),
    ],
)
def test_bad_input_exits_with_its_documented_code_and_one_line(alice, args, code, says):
    done = kubectl_gangweb(*args, kubeconfig=alice)
    assert done.returncode == code, (done.returncode, done.stderr)
    assert says in done.stderr.strip().splitlines()[-1] and "Traceback" not in done.stderr


def test_a_token_gangweb_does_not_accept_is_exit_4(gangweb):
    url, server, folder = gangweb
    stranger = user_kubeconfig(folder, server.url, gangweb_url=url, token=mint_token("stranger"))
    done = kubectl_gangweb("pending", kubeconfig=stranger)
    assert done.returncode == 4 and "401" in done.stderr


def test_an_unreachable_gangweb_is_exit_1(gangweb):
    _, server, folder = gangweb
    from tests.conftest import free_port

    gone = user_kubeconfig(folder, server.url, gangweb_url=f"http://127.0.0.1:{free_port()}")
    done = kubectl_gangweb("pending", kubeconfig=gone)
    assert done.returncode == 1 and "cannot reach gangweb" in done.stderr


def test_completion_scripts_load_in_bash_and_complete_subcommands(tmp_path):
    done = subprocess.run([str(PLUGIN), "completion", "bash"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    script = tmp_path / "completion.bash"
    script.write_text(done.stdout)
    probe = (
        f"source {script}; COMP_WORDS=(kubectl-gangweb pe); COMP_CWORD=1; _kubectl_gangweb; echo ${{COMPREPLY[@]}};"
        "COMP_WORDS=(kubectl-gangweb pending -o); COMP_CWORD=3; COMP_WORDS+=(''); _kubectl_gangweb; echo ${COMPREPLY[@]}"
    )
    lines = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, timeout=30
    ).stdout.splitlines()
    assert lines == ["pending", "table wide json yaml"]
    zsh = subprocess.run([str(PLUGIN), "completion", "zsh"], capture_output=True, text=True, timeout=30)
    assert zsh.returncode == 0 and "bashcompinit" in zsh.stdout


def test_the_token_may_come_from_a_token_file_or_an_exec_credential_plugin(gangweb):
    url, server, folder = gangweb
    (folder / "token").write_text(TOKEN + "\n")
    credential = json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"token": TOKEN},
        }
    )
    for credentials in (
        {"tokenFile": str(folder / "token")},
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "sh",
                "args": ["-c", f"echo '{credential}'"],
            }
        },
    ):
        config = user_kubeconfig(folder, server.url, gangweb_url=url, credentials=credentials)
        done = kubectl_gangweb("pending", "-o", "json", kubeconfig=config)
        assert done.returncode == 0, (credentials, done.stderr)
        assert {r["namespace"] for r in json.loads(done.stdout)} == {"ml"}
