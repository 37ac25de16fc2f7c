"""`make release`: dist/gangweb-<version>-py3-none-any.whl, dist/gangweb.yaml and dist/SHA256SUMS, the same
bytes on every run from the same commit; the image too when buildah is on PATH.

- The wheel: built by pip (setuptools in an isolated build environment), its file times set from the last commit
  (SOURCE_DATE_EPOCH), so that a rebuild is byte-identical.
- The manifest: deploy/overlays/release rendered by hack/cluster's kubectl (the Kubernetes version gangweb
  targets), one file for `kubectl apply -f`, headed by the version; it holds every object of the observe
  overlay except the Secret `gangweb-secrets`, which is the operator's (docs/install.md).
- The image, when buildah is installed (otherwise the commands to run are printed and the rest is still
  written): `buildah build` of the Dockerfile (the wheel above, requirements.lock, OCI labels) on a base made
  here and pinned by its digest (``base_image``: Debian bookworm with its python3.11, by mmdebstrap from
  Debian's mirror, imported with buildah; built once and reused from the cache), written to
  dist/gangweb-<version>.oci.tar (an OCI archive: `skopeo copy oci-archive:... docker://REGISTRY/...`) and
  described in dist/image.json. buildah keeps its storage in ~/.cache/gangweb/containers (vfs, no mounts)
  and runs the build's steps with chroot isolation, which needs no cgroups or user namespaces.
"""

from __future__ import annotations

import hashlib
import json
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
CACHE = Path(os.environ.get("GANGWEB_CACHE_DIR", Path.home() / ".cache" / "gangweb"))
# The base: Debian's own python3.11 on bookworm, what python:3.11-slim-bookworm carries, made from Debian's
# mirror (the only place this machine may fetch images' contents from). Changing the recipe makes a new base.
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3.11", "python3.11-venv", "ca-certificates", "tzdata")
BASE_EPOCH = "1764633600"  # file times in the base's layer (SOURCE_DATE_EPOCH of mmdebstrap)
BASE_REPOSITORY = "localhost/gangweb-base"


def buildah_command(*args: str) -> list[str]:
    """buildah with gangweb's own storage under the cache (vfs: no overlay mounts needed)."""
    storage = CACHE / "containers"
    return [
        "buildah",
        *("--root", str(storage / "storage"), "--runroot", str(storage / "run"), "--storage-driver", "vfs"),
        *args,
    ]


def buildah(*args: str) -> str:
    """What ``buildah_command(*args)`` prints; CalledProcessError when it fails."""
    return subprocess.run(buildah_command(*args), check=True, text=True, capture_output=True).stdout.strip()


def base_recipe() -> str:
    return hashlib.sha256(f"{BASE_SUITE} {' '.join(BASE_PACKAGES)} {BASE_EPOCH}".encode()).hexdigest()[:16]


def base_image() -> tuple[str, str]:
    """(the base's reference by digest, the digest): made once per recipe, then read from buildah's storage."""
    tag = f"{BASE_REPOSITORY}:{BASE_SUITE}-{base_recipe()}"
    try:
        digest = buildah("images", "--digests", "--format", "{{.Digest}}", tag).splitlines()[0]
    except subprocess.CalledProcessError:
        rootfs = CACHE / "image" / f"base-{base_recipe()}.tar"
        if not rootfs.exists():
            rootfs.parent.mkdir(parents=True, exist_ok=True)
            partial = rootfs.with_suffix(".partial.tar")
            subprocess.run(
                [
                    "mmdebstrap",
                    "--quiet",
                    "--format=tar",
                    "--variant=minbase",
                    "--include=" + ",".join(BASE_PACKAGES),
                    "--aptopt=Acquire::Retries 3",
                    "--dpkgopt=path-exclude=/usr/share/doc/*",
                    "--dpkgopt=path-exclude=/usr/share/man/*",
                    "--dpkgopt=path-exclude=/usr/share/locale/*",
                    BASE_SUITE,
                    str(partial),
                ],
                check=True,
                env={**os.environ, "SOURCE_DATE_EPOCH": BASE_EPOCH},
            )
            partial.replace(rootfs)
        container = buildah("from", "scratch")
        try:
            buildah("add", container, str(rootfs), "/")
            buildah(
                "config",
                "--env",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--env",
                "LANG=C.UTF-8",
                "--cmd",
                "python3",
                "--label",
                f"org.opencontainers.image.description=Debian {BASE_SUITE} minbase with "
                + ", ".join(BASE_PACKAGES),
                container,
            )
            buildah("commit", "--quiet", "--timestamp", BASE_EPOCH, container, tag)
        finally:
            buildah("rm", container)
        digest = buildah("images", "--digests", "--format", "{{.Digest}}", tag).splitlines()[0]
    return f"{BASE_REPOSITORY}@{digest}", digest


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
    created = subprocess.run(
        ["date", "-u", "-d", f"@{commit_time()}", "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True, text=True
    ).stdout.strip()
    build_args = ["--build-arg", f"VERSION={release}", "--build-arg", f"REVISION={revision()}"]
    build_args += ["--build-arg", f"CREATED={created}"]
    if shutil.which("buildah") is None or shutil.which("mmdebstrap") is None:
        return (
            "image: not built (buildah and mmdebstrap are not both installed: apt-get install buildah "
            "mmdebstrap); or, with a registry's python:3.11-slim-bookworm: buildah build "
            + " ".join(build_args)
            + f" -t {IMAGE}:{release} ."
        )
    base, base_digest = base_image()
    tag = f"{IMAGE}:{release}"
    # The build context holds only what the Dockerfile copies (no checkout, no .venv), wherever DIST is.
    context = DIST / "context"
    shutil.rmtree(context, ignore_errors=True)
    (context / "dist").mkdir(parents=True)
    for name in ("Dockerfile", "requirements.lock"):
        shutil.copy2(ROOT / name, context / name)
    shutil.copy2(DIST / f"gangweb-{release}-py3-none-any.whl", context / "dist")
    # The lock's wheels, fetched here with their hashes checked (pip's cache makes a rebuild quick); the
    # build installs them with --no-index and checks the hashes again.
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--require-hashes", "--no-deps"]
        + [
            "--only-binary=:all:",
            "-r",
            str(ROOT / "requirements.lock"),
            "-d",
            str(context / "dist" / "wheels"),
        ],
        check=True,
    )
    subprocess.run(
        buildah_command(
            "build",
            "--quiet",
            "--isolation",
            "chroot",
            "--layers=false",
            *build_args,
            "--build-arg",
            f"PYTHON_BASE={base}",
            "--label",
            f"org.opencontainers.image.base.digest={base_digest}",
            "--timestamp",
            commit_time(),
            "-t",
            tag,
            str(context),
        ),
        check=True,
    )
    shutil.rmtree(context)
    digest = buildah("images", "--digests", "--format", "{{.Digest}}", tag).splitlines()[0]
    archive = DIST / f"gangweb-{release}.oci.tar"
    archive.unlink(missing_ok=True)
    buildah("push", "--quiet", tag, f"oci-archive:{archive}:{tag}")
    size = (
        int(json.loads(buildah("inspect", "--type", "image", tag)).get("Size") or 0) or archive.stat().st_size
    )
    description = {"image": tag, "digest": digest, "base": base, "archive": archive.name, "size": size}
    (DIST / "image.json").write_text(json.dumps(description, indent=2) + "\n")
    return f"image: {tag} {digest} (base {base}), {archive.name}"


def main() -> None:
    global DIST
    if "--dist" in sys.argv:
        DIST = Path(sys.argv[sys.argv.index("--dist") + 1]).resolve()
    release = version()
    DIST.mkdir(parents=True, exist_ok=True)
    for old in [*DIST.glob("gangweb-*.whl"), DIST / "gangweb.yaml", DIST / "SHA256SUMS", DIST / "image.json"]:
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
