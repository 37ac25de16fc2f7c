"""The Dockerfile, read as Docker would (there is no Docker engine here to build it): the user deploy/
runs as, the files it copies, the programs deploy/ starts, the writable paths, the ports."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.deploy.rendering import PROCESSES, config_data, pod_spec


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    found, pending = [], ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            keyword, _, arguments = pending.strip().partition(" ")
            found.append((keyword.upper(), arguments.strip()))
            pending = ""
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last:]


def env_of(steps) -> dict[str, str]:
    env = {}
    for keyword, arguments in steps:
        if keyword == "ENV":
            for pair in arguments.split():
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def test_it_runs_as_the_non_root_user_deploy_names(rendered):
    (user,) = [a for k, a in final_stage() if k == "USER"]
    uid, _, gid = user.partition(":")
    assert (
        uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    )  # numeric: runAsNonRoot checks it
    for process in PROCESSES:
        context = pod_spec(rendered["cert-manager"], process)["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (int(uid), int(gid)), process


def test_it_copies_what_exists_and_leaves_the_test_tooling_out():
    copied = set()
    for keyword, arguments in instructions():
        if keyword == "COPY" and not arguments.startswith("--from"):
            *sources, _target = arguments.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file"
                copied.add(source)
    assert {
        "gangweb",
        "scheduler",
        "admission",
        "manage.py",
        "constraints.txt",
    } <= copied
    assert not copied & {"kubetestserver", "tests", "deploy", "."}


def test_it_works_on_a_read_only_root_filesystem(rendered):
    steps = final_stage()
    env = env_of(steps)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert any(
        k == "RUN" and "compileall" in a for k, a in instructions()
    )  # nothing left to compile at run time
    # The writable paths deploy/ mounts as emptyDirs are the ones the image points its writers at.
    assert env["GANGWEB_VAR_DIR"] == config_data(rendered["cert-manager"])["GANGWEB_VAR_DIR"]
    assert env["HOME"] == "/tmp"
    for process in PROCESSES:
        for container in pod_spec(rendered["cert-manager"], process)["containers"]:
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert {"/tmp", env["GANGWEB_VAR_DIR"]} <= mounts


def test_every_program_deploy_starts_is_in_the_image_at_the_working_directory(rendered):
    (workdir,) = [a for k, a in final_stage() if k == "WORKDIR"]
    env = env_of(final_stage())
    assert env["PATH"].startswith("/opt/venv/bin:")
    # The programs come from the dependencies pip installs into that venv (here: the project's venv).
    venv_bin = Path(sys.executable).parent
    for process in PROCESSES:
        spec = pod_spec(rendered["cert-manager"], process)
        for container in spec.get("initContainers", []) + spec["containers"]:
            program = container["command"][0]
            assert program in ("python", "uvicorn", "celery"), program
            if program != "python":
                assert (venv_bin / program).exists() or shutil.which(program), program
            else:
                assert container["command"][1] == "manage.py" and (ROOT / "manage.py").exists()
            assert "workingDir" not in container  # manage.py is found in the image's WORKDIR
    assert workdir == "/app"


def test_it_exposes_the_ports_deploy_uses_and_serves_the_dashboard_by_default(rendered):
    (exposed,) = [a for k, a in final_stage() if k == "EXPOSE"]
    ports = {
        p["containerPort"]
        for process in PROCESSES
        for c in pod_spec(rendered["cert-manager"], process)["containers"]
        for p in c.get("ports", [])
    }
    assert {int(p) for p in exposed.split()} == ports
    (cmd,) = [a for k, a in final_stage() if k == "CMD"]
    (web,) = pod_spec(rendered["cert-manager"], "web")["containers"]
    assert json.loads(cmd) == web["command"]


def test_readme_names_the_command_of_each_process():
    readme = (ROOT / "README.md").read_text()
    for keyword, arguments in instructions():
        if keyword == "CMD":
            assert " ".join(json.loads(arguments)) in readme
    for command in (
        "webhook serve",
        "celery -A gangweb worker",
        "celery -A gangweb beat",
        "manage.py migrate",
    ):
        assert command in readme, command
