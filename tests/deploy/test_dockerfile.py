"""The Dockerfile, read as a builder would (the image itself is built and opened by test_image.py): the
user deploy/ runs as, the wheel and the hashed lock it installs, the base digest and labels, the programs
deploy/ starts, the writable paths, the ports."""

from __future__ import annotations

import importlib.metadata
import json
import re
import zipfile

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


def arg_default(name: str) -> str:
    (value,) = {a.partition("=")[2] for k, a in instructions() if k == "ARG" and a.startswith(f"{name}=")}
    return value


def test_it_installs_the_release_wheel_and_the_hashed_lock_only(release):
    """The build copies nothing of the checkout but the lock and the wheel `make release` writes (no sources,
    no test tooling), installs the lock with --require-hashes and the wheel without dependencies."""
    copied = set()
    for keyword, arguments in instructions():
        if keyword == "COPY" and not arguments.startswith("--from"):
            *sources, _target = arguments.split()
            copied |= {s.replace("${VERSION}", arg_default("VERSION")) for s in sources}
    wheel = release["wheel"]
    assert copied == {"requirements.lock", "dist/wheels", f"dist/{wheel.name}"}, copied
    run = " ".join(a for k, a in instructions() if k == "RUN")
    assert (
        "pip install --require-hashes --no-deps --no-index --find-links /build/wheels -r /build/requirements.lock"
        in run
    )
    assert "pip install --no-deps --no-index /build/gangweb-${VERSION}-py3-none-any.whl" in run
    with zipfile.ZipFile(wheel) as built:
        tops = {name.split("/")[0] for name in built.namelist()}
    assert {"gangweb", "scheduler", "admission"} <= tops
    assert not tops & {"kubetestserver", "tests", "deploy", "hack"}, tops


def test_the_lock_pins_constraints_versions_each_with_a_hash():
    pins = dict(
        line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line
    )
    pins = {name.lower().replace("_", "-"): version for name, version in pins.items()}
    locked = {}
    for entry in (ROOT / "requirements.lock").read_text().replace("\\\n", " ").splitlines():
        if entry.strip() and not entry.startswith("#"):
            requirement, *hashes = entry.split()
            name, _, version = requirement.partition("==")
            assert hashes and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes), entry
            locked[name.lower().replace("_", "-")] = version
    assert {"django", "celery", "uvicorn", "redis", "kubernetes", "numpy"} <= set(locked)
    assert not {"pytest", "ruff", "schemathesis", "playwright"} & set(locked)  # runtime only
    assert {name: pins.get(name) for name in locked} == locked


def test_the_base_is_pinned_by_digest_and_the_image_is_labelled():
    base = arg_default("PYTHON_BASE")
    assert re.fullmatch(r"docker\.io/library/python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base), base
    assert [a for k, a in instructions() if k == "FROM"] == ["${PYTHON_BASE} AS build", "${PYTHON_BASE}"]
    labels = " ".join(a for k, a in final_stage() if k == "LABEL")
    for key in ("title", "version", "revision", "created", "source", "licenses", "base.name"):
        assert f"org.opencontainers.image.{key}=" in labels, key


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


def console_scripts(distribution: str) -> set[str]:
    return {
        e.name
        for e in importlib.metadata.distribution(distribution).entry_points
        if e.group == "console_scripts"
    }


def test_every_program_deploy_starts_is_a_command_the_image_installs(release):
    """Each container's program is a console script of the wheel or of a package the lock installs, all in
    the venv on the image's PATH; nothing runs from a working directory (there is no checkout)."""
    env = env_of(final_stage())
    assert env["PATH"].startswith("/opt/venv/bin:")
    with zipfile.ZipFile(release["wheel"]) as built:
        (entry_points,) = [n for n in built.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = built.read(entry_points).decode()
    from_wheel = set(re.findall(r"^(\S+) = ", text.partition("[console_scripts]")[2], flags=re.M))
    lock = (ROOT / "requirements.lock").read_text().lower()
    programs = set()
    for overlay, objects in release["rendered"].items():
        for process in PROCESSES:
            spec = pod_spec(objects, process)
            for container in spec.get("initContainers", []) + spec["containers"]:
                programs.add(container["command"][0])
                assert "workingDir" not in container, (overlay, process)
    for program in programs:
        if program in from_wheel:
            continue
        assert f"\n{program}==" in lock, f"{program}: neither the wheel's command nor a locked package"
        assert program in console_scripts(program), program
    assert {"gangweb", "uvicorn", "celery"} == programs, programs


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
        "gangweb migrate",
    ):
        assert command in readme, command
