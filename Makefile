# The two commands README.md gives. Everything else is a helper for them.
.PHONY: demo test install services cluster cluster-down

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
