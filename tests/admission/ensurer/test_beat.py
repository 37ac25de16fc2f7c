"""Beat runs the ensurer on its own: a real `celery worker -B` process, real Redis and PostgreSQL, the API
test server in its own process. Nobody calls the task; the PodGroup appears within a few seconds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kubetestserver import TestServerProcess
from scheduler.preemption.models import LedgerEntry
from tests.admission.ensurer.test_end_to_end import through_the_webhook
from tests.admission.support import load_owner, load_pod, priority_classes
from tests.conftest import ROOT
from tests.scheduler.preemption.workers import postgres_url_for_test_db, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(120)]


def test_beat_creates_the_missing_podgroup_without_being_asked(broker, tmp_path):
    with TestServerProcess(tmp_path / "kubeconfig") as server:
        pod = through_the_webhook(load_pod("job-indexed.yaml"))
        pod["metadata"]["name"] = "bert-pretrain-0-abcde"
        server.control.load([*priority_classes(), load_owner("job-bert-pretrain.yaml"), pod])
        env = {
            **os.environ,
            "DATABASE_URL": postgres_url_for_test_db(),
            "REDIS_URL": broker,
            "KUBECONFIG": str(server.kubeconfig),
            "GANGWEB_CLUSTER": "kube",
            "SECRET_KEY": "beat-test",
            "GANGWEB_DEMO": "0",
            "GANGWEB_ENSURE_INTERVAL_SECONDS": "1",
        }
        log_path = tmp_path / "worker.log"
        with open(log_path, "ab") as log:
            worker = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "gangweb",
                    "worker",
                    "-B",
                    "-s",
                    str(tmp_path / "beat-schedule"),
                    "--pool=solo",
                    "--loglevel=INFO",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:

                def created():
                    return [
                        o
                        for o in server.control.dump()
                        if o.get("kind") == "PodGroup" and o["metadata"]["name"] == "bert-pretrain"
                    ]

                [group] = wait_until(created, 60, "beat to ensure the PodGroup", log_path)
                wait_until(
                    lambda: LedgerEntry.objects.filter(kind="podgroup.created").exists(),
                    10,
                    "the ledger entry",
                    log_path,
                )
                # Later beats find it present and write nothing more.
                passes = log_path.read_text().count("scheduler.ensure_podgroups[")
                wait_until(
                    lambda: log_path.read_text().count("scheduler.ensure_podgroups[") >= passes + 4,
                    20,
                    "two more passes",
                    log_path,
                )
            finally:
                worker.terminate()
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait(timeout=5)
        posts = [
            r
            for r in server.control.requests("/podgroups", method="POST")
            if "scheduling.k8s.io" in r["path"]
        ]
        assert [r["code"] for r in posts] == [201]
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 8
    assert LedgerEntry.objects.filter(kind="podgroup.created").count() == 1
