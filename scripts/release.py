"""`make release`: dist/gangweb-<version>-py3-none-any.whl, dist/gangweb.yaml and dist/SHA256SUMS, the same
bytes on every run from the same commit; the image too when buildah is on PATH.

- The wheel: built by pip (setuptools in an isolated build environment), its file times set from the last commit
  (SOURCE_DATE_EPOCH), so that a rebuild is byte-identical.
- The manifest: deploy/overlays/release rendered by hack/cluster's kubectl (the Kubernetes version gangweb
  targets), one file for `kubectl apply -f`, headed by the version; it holds every object of the observe
  overlay except the Secret `gangweb-secrets`, which is the operator's (docs/install.md).
- The image: `buildah build` of the Dockerfile (the wheel above, requirements.lock, the base by digest, OCI
  labels) when buildah is installed; otherwise the command to run is printed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"  # or --dist DIR
OVERLAY = ROOT / "deploy" / "overlays" / "release"
IMAGE = "ghcr.io/gangweb/gangweb"


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def commit_time() -> str:
    done = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "0"


def revision() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def kubectl() -> str:
    script = ROOT / "hack" / "cluster" / "cluster.py"
    done = subprocess.run([sys.executable, str(script), "build"], capture_output=True, text=True, check=True)
    return str(Path(done.stdout.strip().splitlines()[-1]) / "kubectl")


def wheel(release: str) -> Path:
    build = DIST / "build"
    shutil.rmtree(build, ignore_errors=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": commit_time()}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(build),
        ]
        + [str(ROOT)],
        check=True,
        env=env,
        cwd=ROOT,
    )
    (built,) = build.glob(f"gangweb-{release}-*.whl")
    target = DIST / built.name
    built.replace(target)
    shutil.rmtree(build)
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' scratch space in the checkout
    return target


def manifest(release: str, kubectl_path: str) -> str:
    rendered = subprocess.run(
        [kubectl_path, "kustomize", str(OVERLAY)], capture_output=True, text=True, check=True
    ).stdout
    if f"image: {IMAGE}:{release}\n" not in rendered:
        raise SystemExit(f"{OVERLAY.relative_to(ROOT)} does not set the image to {IMAGE}:{release}")
    return (
        f'# gangweb {release}: kubectl apply -f gangweb.yaml (docs/install.md "The release manifest").\n'
        "# Needs cert-manager, and the Secret gangweb-secrets (SECRET_KEY, DATABASE_URL, REDIS_URL) in\n"
        "# gangweb-system. Rendered by `make release` from deploy/overlays/release; do not edit.\n"
        "---\n" + rendered
    )


def image(release: str) -> str:
    command = [
        "buildah",
        "build",
        "--build-arg",
        f"VERSION={release}",
        "--build-arg",
        f"REVISION={revision()}",
        "--build-arg",
        "CREATED="
        + subprocess.run(
            ["date", "-u", "-d", f"@{commit_time()}", "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True, text=True
        ).stdout.strip(),
        "--timestamp",
        commit_time(),
        "-t",
        f"{IMAGE}:{release}",
        str(ROOT),
    ]
    if shutil.which("buildah") is None:
        return "image: not built (no buildah here); with buildah: " + " ".join(command)
    subprocess.run(command, check=True, cwd=ROOT)
    return f"image: {IMAGE}:{release}"


def main() -> None:
    global DIST
    if "--dist" in sys.argv:
        DIST = Path(sys.argv[sys.argv.index("--dist") + 1]).resolve()
    release = version()
    DIST.mkdir(parents=True, exist_ok=True)
    for old in [*DIST.glob("gangweb-*.whl"), DIST / "gangweb.yaml", DIST / "SHA256SUMS"]:
        old.unlink(missing_ok=True)
    built = wheel(release)
    (DIST / "gangweb.yaml").write_text(manifest(release, kubectl()))
    sums = "".join(
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"
        for path in sorted([built, DIST / "gangweb.yaml"])
    )
    (DIST / "SHA256SUMS").write_text(sums)
    print(sums, end="")
    if "--no-image" not in sys.argv:
        print(image(release))


if __name__ == "__main__":
    main()
