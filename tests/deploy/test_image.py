"""The image `make release` builds (scripts/release.py: buildah on a Debian base made here with mmdebstrap,
pinned by digest), opened as a builder leaves it: its root filesystem through `buildah mount` and its
programs run inside it through `buildah run --isolation chroot`. Every program deploy/ starts is a console
script of the image's venv and starts there; the venv holds exactly the lock and the wheel; the image runs
as deploy/'s user, is labelled, and carries no test tooling. The base is built once and then reused from
~/.cache/gangweb (what makes this test minutes, not tens of minutes)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.deploy.rendering import PROCESSES, pod_spec

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

sys.path.insert(0, str(ROOT / "scripts"))
import release as release_script  # noqa: E402 (scripts/ is no package)

VENV = "opt/venv"


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    if shutil.which("buildah") is None or shutil.which("mmdebstrap") is None:
        pytest.skip("needs buildah and mmdebstrap (apt-get install buildah mmdebstrap)")
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release.py"), "--dist", str(dist)],
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, done.stderr[-4000:] + done.stdout[-2000:]
    described = json.loads((dist / "image.json").read_text())
    container = release_script.buildah("from", "--pull-never", described["image"])
    try:
        root = Path(release_script.buildah("mount", container))
        config = json.loads(release_script.buildah("inspect", "--type", "image", described["image"]))
        yield {**described, "container": container, "root": root, "config": config, "dist": dist}
    finally:
        release_script.buildah("rm", container)


def inside(image: dict, *command: str) -> subprocess.CompletedProcess:
    """``command`` run in the image's root filesystem as its user, with its environment."""
    env = image["config"]["OCIv1"]["config"]["Env"]
    args = ["run", "--isolation", "chroot", "--user", image["config"]["OCIv1"]["config"]["User"]]
    for pair in env:
        args += ["--env", pair]
    command = release_script.buildah_command(*args, image["container"], "--", *command)
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def programs(rendered: dict) -> dict[str, list[str]]:
    """Each program a container of deploy/ starts (any overlay) -> one full command line that starts it."""
    found: dict[str, list[str]] = {}
    for objects in rendered.values():
        for process in PROCESSES:
            spec = pod_spec(objects, process)
            for container in spec.get("initContainers", []) + spec["containers"]:
                found.setdefault(container["command"][0], container["command"] + container.get("args", []))
    return found


def test_every_program_deploy_starts_is_in_the_images_venv_and_starts_there(image, rendered):
    root = image["root"]
    found = programs(rendered)
    assert set(found) == {"gangweb", "uvicorn", "celery"}, found
    for program in found:
        script = root / VENV / "bin" / program
        assert script.is_file(), program
        assert script.read_text().splitlines()[0] == f"#!/{VENV}/bin/python3", program
    version = {"gangweb": ["help"], "uvicorn": ["--version"], "celery": ["--version"]}
    for program, args in version.items():
        done = inside(image, program, *args)
        assert done.returncode == 0, (program, done.stderr[-2000:])
    # The dashboard's templates and static files came with the wheel (the web process serves them).
    site = next((root / VENV / "lib").glob("python3.11/site-packages"))
    assert (site / "gangweb" / "templates").is_dir() and (site / "gangweb" / "static").is_dir()


def test_the_web_application_imports_inside_the_image(image):
    done = inside(
        image, "python", "-c", "import gangweb.asgi, scheduler.engine, admission.server; print('ok')"
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_venv_holds_the_lock_and_the_wheel_and_no_test_tooling(image):
    site = next((image["root"] / VENV / "lib").glob("python3.11/site-packages"))
    installed = {}
    for info in site.glob("*.dist-info"):
        meta = (info / "METADATA").read_text(errors="replace")
        name = re.search(r"^Name: (.+)$", meta, re.M).group(1).strip().lower().replace("_", "-")
        installed[name] = re.search(r"^Version: (.+)$", meta, re.M).group(1).strip()
    locked = {}
    for entry in (ROOT / "requirements.lock").read_text().replace("\\\n", " ").splitlines():
        if entry.strip() and not entry.startswith("#"):
            name, _, version = entry.split()[0].partition("==")
            locked[name.lower().replace("_", "-")] = version
    assert installed.pop("gangweb") == release_script.version()
    for own in ("pip", "setuptools"):  # what the venv comes with (ensurepip)
        installed.pop(own, None)
    assert installed == locked
    assert not {"kubetestserver", "tests", "hack"} & {p.name for p in site.iterdir()}
    assert not (image["root"] / "build").exists()  # the build stage's wheel and lock stayed there


def test_it_runs_as_deploys_user_is_labelled_and_pinned_to_its_base(image, rendered):
    config = image["config"]["OCIv1"]["config"]
    assert config["User"] == "10001:10001"
    passwd = (image["root"] / "etc" / "passwd").read_text()
    assert re.search(r"^gangweb:x:10001:10001:", passwd, re.M), passwd[-500:]
    for process in PROCESSES:
        context = pod_spec(rendered["cert-manager"], process)["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (10001, 10001)
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == release_script.version()
    assert re.fullmatch(r"[0-9a-f]{40}", labels["org.opencontainers.image.revision"])
    assert labels["org.opencontainers.image.base.name"] == image["base"]
    assert image["base"].endswith("@" + labels["org.opencontainers.image.base.digest"])
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", labels["org.opencontainers.image.base.digest"])
    (web,) = pod_spec(rendered["cert-manager"], "web")["containers"]
    assert config["Cmd"] == web["command"]
    assert (image["dist"] / image["archive"]).stat().st_size > 0
