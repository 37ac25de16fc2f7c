"""TokenReview and SubjectAccessReview answers kept in Redis (gangweb/access/sharedcache.py): two real web
processes (uvicorn, as deploy/'s two web replicas) ask the API server once between them; a revoked token
stops working within the TTL; an answer copied to another key in Redis, or kept past its expiry, is not
believed; while Redis does not answer, each process caches on its own."""

from __future__ import annotations

import time

import httpx
import pytest
from django.conf import settings as django_settings

from gangweb.access import kube
from gangweb.access.sharedcache import SharedCache
from kubetestserver import KubeTestServer
from kubetestserver.reviews import mint_token
from tests.conftest import free_port
from tests.gangweb.access.test_kubernetes import (
    ADMIN_TOKEN,
    READ_PODGROUPS,
    binding,
    cluster_role,
    reviews,
    who,
)
from tests.gangweb.access.test_kubernetes import server as kube_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(300)

TTL = 30  # long enough for both replicas' first requests on a loaded machine


@pytest.mark.slow
def test_two_web_replicas_share_the_reviews_and_a_revoked_token_stops_within_the_ttl(server, tmp_path):
    with KubeTestServer() as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        extra = {
            "GANGWEB_CLUSTER": "kube",
            "KUBECONFIG": str(kubeconfig),
            "GANGWEB_K8S_REVIEW_TTL_SECONDS": str(TTL),
            "GANGWEB_K8S_REVIEW_NEGATIVE_TTL_SECONDS": str(TTL),  # the cluster-wide "no" too
        }
        first, _ = server(**extra)
        second, _ = server(**extra)
        token = mint_token("ci")
        api.add_token(token, "system:serviceaccount:team-a:ci")
        api.load(
            [
                cluster_role("gangweb-viewer", READ_PODGROUPS),
                binding(
                    "team-a",
                    "gangweb-viewer",
                    {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"},
                ),
            ]
        )

        def status(address: str) -> int:
            answer = httpx.get(
                f"http://{address}/api/v1/requests/", headers={"Authorization": f"Bearer {token}"}, timeout=60
            )
            return answer.status_code

        assert status(first) == 200
        asked = reviews(api)
        assert asked[0] == 1 and asked[1] >= 1
        assert status(second) == 200
        assert reviews(api) == asked  # the second replica found every answer the first one got

        api.state.tokens.remove(token)
        revoked = time.monotonic()
        answers: list[tuple[float, int]] = []  # (sent, seconds after the revocation; status)
        last_round = [200]
        while 200 in last_round or answers[-1][0] <= TTL:
            assert time.monotonic() - revoked < 4 * TTL, answers
            last_round = []
            for address in (first, second):
                sent = time.monotonic() - revoked
                last_round.append(status(address))
                answers.append((sent, last_round[-1]))
        # Cached when first reviewed, before the revocation: no request sent a TTL after it is let in.
        assert [code for sent, code in answers if sent > TTL] and all(
            code == 401 for sent, code in answers if sent > TTL
        ), answers


@pytest.fixture
def redis_cache(kube_server):  # noqa: F811 (the fixture imported above)
    if not django_settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    yield kube_server


def test_an_answer_moved_to_another_key_in_redis_is_not_believed(redis_cache, monkeypatch):
    import redis

    redis_cache.add_token(ADMIN_TOKEN, "root", groups=["platform-admins"])
    assert who(ADMIN_TOKEN) == "root"
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    cache = kube._tokens
    stored = client.get(cache._name(ADMIN_TOKEN))
    assert stored is not None and ADMIN_TOKEN.encode() not in stored
    assert not [name for name in client.keys("gangweb:review:*") if ADMIN_TOKEN.encode() in name]

    # Someone who may write to Redis copies root's answer to the key of a token of their own.
    forged = mint_token("mallory")
    client.set(cache._name(forged), stored, px=60_000)
    assert who(forged) is None
    assert reviews(redis_cache)[0] == 2  # asked the API server, which does not know the token

    # ... or keeps an answer alive past its expiry: its own expiry time is signed with it.
    client.set(cache._name(ADMIN_TOKEN), stored, px=60_000)
    assert cache.get(ADMIN_TOKEN)[0]
    later = time.time() + 61
    monkeypatch.setattr(time, "time", lambda: later)
    assert not cache.get(ADMIN_TOKEN)[0]
    client.close()


def test_a_no_is_kept_shorter_than_a_yes(redis_cache, settings):
    settings.GANGWEB_K8S_REVIEW_NEGATIVE_TTL_SECONDS = 1
    token = mint_token("late")
    assert who(token) is None
    redis_cache.add_token(token, "late")
    assert who(token) is None  # still the cached "no"
    deadline = time.monotonic() + 30
    while who(token) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert who(token) == "late"
    assert time.monotonic() < deadline


def test_while_redis_does_not_answer_each_process_caches_on_its_own(kube_server, settings):  # noqa: F811
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    cache = SharedCache("token-test", 10)
    cache.put("k", [1], 60)
    assert cache.get("k") == (True, [1]) and cache.failing
    kube.clear_caches()
    kube_server.add_token(ADMIN_TOKEN, "root")
    assert who(ADMIN_TOKEN) == "root"
    assert who(ADMIN_TOKEN) == "root"
    assert reviews(kube_server)[0] == 1
