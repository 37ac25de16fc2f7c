# The two commands README.md gives. Everything else is a helper for them.
.PHONY: demo test install services cluster cluster-down release lock

demo:
	@./scripts/demo.sh

test:
	@./scripts/test.sh

install:
	@./scripts/bootstrap.sh

services:
	@./scripts/services.sh

# A real control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, KWOK) on loopback,
# built once from hack/cluster's pinned Go modules; the last line printed is KUBECONFIG=<path> (docs/kube.md).
cluster:
	@.venv/bin/python hack/cluster/cluster.py up

cluster-down:
	@.venv/bin/python hack/cluster/cluster.py down

# dist/gangweb-<version>-py3-none-any.whl, dist/gangweb.yaml (the release manifest, one file for kubectl apply -f)
# and dist/SHA256SUMS; the image too where buildah is installed (scripts/release.py, docs/install.md).
release:
	@.venv/bin/python scripts/release.py

# requirements.lock: the image's runtime dependencies with their hashes, from constraints.txt (scripts/lock.py).
lock:
	@.venv/bin/python scripts/lock.py
