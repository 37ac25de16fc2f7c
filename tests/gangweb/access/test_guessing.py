"""Guessing at passwords and bearer tokens through a real server (daphne, Redis): wrong passwords are
counted per account and per source address; past a few, the answer is 429 with Retry-After, before any
hash; the owner of a guessed-at account still signs in from a clean address, every wait expires, and web
replicas count together. A flood of made-up bearer tokens costs the Kubernetes API server a bounded
number of TokenReviews. (Addresses: the client binds to one of 127.0.0.0/8, which all reach the server.)"""

from __future__ import annotations

import base64
import math
import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from django.test import Client

from gangweb.access.grants import grant
from kubetestserver import KubeTestServer
from kubetestserver.reviews import mint_token
from tests.gangweb.access.http import Browser
from tests.gangweb.access.test_kubernetes import READ_PODGROUPS, binding, cluster_role

pytestmark = pytest.mark.timeout(300)

VERA = ("vera", "vera-password-1")
GUESSES = 150


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


def api_client(address: str, source: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://{address}", timeout=60, transport=httpx.HTTPTransport(local_address=source)
    )


def most_hashed(elapsed: float, free: int = 5) -> int:
    """Wrong passwords that reach the hash in ``elapsed`` seconds of guessing at one account: the free
    ones, then one each time the doubling wait (1 s, 2 s, 4 s, ...) runs out."""
    return free + math.floor(math.log2(elapsed + 1)) + 1


def guess_until_the_wait_is(guess, seconds: int, deadline: float = 60) -> httpx.Response:
    """Keep guessing until a refusal asks for at least ``seconds`` (then an attempt sent at once is
    refused whatever the machine's load); that refusal."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        answer = guess()
        if answer.status_code == 429 and int(answer.headers["Retry-After"]) >= seconds:
            return answer
    raise AssertionError(f"no refusal asking for {seconds} s within {deadline} s of guessing")


def test_150_wrong_basic_passwords_reach_the_hash_a_few_times_and_the_owner_still_gets_in(server):
    address, _ = server()
    guesser = api_client(address, "127.0.0.2")
    started = time.monotonic()
    answers = [guesser.get("/api/v1/", headers=basic("vera", f"guess-{i}")) for i in range(GUESSES)]
    elapsed = time.monotonic() - started
    hashed = [a for a in answers if a.status_code == 401]
    refused = [a for a in answers if a.status_code == 429]
    assert len(hashed) + len(refused) == GUESSES, {a.status_code for a in answers}
    assert len(hashed) <= most_hashed(elapsed), (len(hashed), elapsed)
    last = refused[-1]
    assert last.headers["Content-Type"] == "application/problem+json"
    assert last.json()["status"] == 429 and "too many wrong passwords" in last.json()["detail"]
    assert int(last.headers["Retry-After"]) >= 1

    guess_until_the_wait_is(lambda: guesser.get("/api/v1/", headers=basic("vera", "one more")), 4)
    # The right password from the guessing address is refused too: a guess is never confirmed early.
    assert guesser.get("/api/v1/", headers=basic(*VERA)).status_code == 429
    # The owner, on an address that has not failed, is let in at once.
    assert api_client(address, "127.0.0.3").get("/api/v1/", headers=basic(*VERA)).status_code == 200


def test_150_wrong_sign_ins_get_a_form_error_with_429_and_the_owner_still_signs_in(server):
    address, _ = server()
    guesser = Browser(address, source="127.0.0.4")
    token = guesser.csrf("/login/")

    def sign_in(password: str) -> httpx.Response:
        return guesser.http.post(
            "/login/", data={"csrfmiddlewaretoken": token, "username": "vera", "password": password}
        )

    started = time.monotonic()
    answers = [sign_in(f"guess-{i}") for i in range(GUESSES)]
    elapsed = time.monotonic() - started
    wrong = [a for a in answers if a.status_code == 200]  # the form again: wrong name or password
    refused = [a for a in answers if a.status_code == 429]
    assert len(wrong) + len(refused) == GUESSES, {a.status_code for a in answers}
    assert len(wrong) <= most_hashed(elapsed), (len(wrong), elapsed)
    page = refused[-1]
    assert int(page.headers["Retry-After"]) >= 1
    alert = re.search(r'<p class="error" role="alert">([^<]*)</p>', page.text).group(1)
    assert "Too many failed sign-ins" in alert and f"{page.headers['Retry-After']} s" in alert

    guess_until_the_wait_is(lambda: sign_in("one more"), 4)
    assert sign_in(VERA[1]).status_code == 429
    assert "sessionid" not in guesser.http.cookies
    Browser(address, source="127.0.0.5").sign_in(*VERA)


def test_every_wait_runs_out(server):
    address, _ = server(GANGWEB_BACKOFF_MAX_SECONDS="2")
    guesser = api_client(address, "127.0.0.6")
    refusal = guess_until_the_wait_is(lambda: guesser.get("/api/v1/", headers=basic("vera", "nope")), 1)
    time.sleep(int(refusal.headers["Retry-After"]))  # what the answer asked for, no more
    assert guesser.get("/api/v1/", headers=basic(*VERA)).status_code == 200


def test_web_replicas_count_together_through_redis(server):
    first, _ = server()
    second, _ = server()
    guess_until_the_wait_is(
        lambda: api_client(first, "127.0.0.7").get("/api/v1/", headers=basic("vera", "nope")), 4
    )
    answer = api_client(second, "127.0.0.7").get("/api/v1/", headers=basic(*VERA))
    assert answer.status_code == 429 and int(answer.headers["Retry-After"]) >= 1


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_flood_of_made_up_bearer_tokens_costs_the_api_server_a_few_token_reviews(server, tmp_path):
    free = 10
    with KubeTestServer() as kube:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        address, _ = server(
            GANGWEB_CLUSTER="kube", KUBECONFIG=str(kubeconfig), GANGWEB_K8S_REVIEW_FAILURES=str(free)
        )
        flooder = api_client(address, "127.0.0.8")

        def token_reviews() -> int:
            return len(kube.requests("/tokenreviews", "POST"))

        # Not shaped like a Kubernetes token: refused without a review.
        answers = [flooder.get("/api/v1/", headers=bearer(secrets.token_urlsafe(32))) for _ in range(100)]
        assert {a.status_code for a in answers} == {401} and token_reviews() == 0
        assert "shaped like a Kubernetes token" in answers[0].json()["detail"]

        # 100 made-up JWTs in about a second, 8 at a time: the free reviews, then 429 until a wait runs out.
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(
                    lambda t: flooder.get("/api/v1/", headers=bearer(t)),
                    [mint_token("x") for _ in range(100)],
                )
            )
        elapsed = time.monotonic() - started
        statuses = [a.status_code for a in answers]
        assert set(statuses) == {401, 429} and statuses.count(401) == token_reviews()
        assert token_reviews() <= most_hashed(elapsed, free), (token_reviews(), elapsed)
        refused = answers[statuses.index(429)]
        assert refused.headers["Content-Type"] == "application/problem+json"
        assert int(refused.headers["Retry-After"]) >= 1

        # A tool with a real token, from another address, is reviewed and let in meanwhile.
        before = token_reviews()
        tool = mint_token("ci")
        kube.add_token(tool, "system:serviceaccount:team-a:ci")
        kube.load(
            [
                cluster_role("gangweb-viewer", READ_PODGROUPS),
                binding(
                    "team-a",
                    "gangweb-viewer",
                    {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"},
                ),
            ]
        )
        assert api_client(address, "127.0.0.9").get("/api/v1/", headers=bearer(tool)).status_code == 200
        assert token_reviews() == before + 1

        # A token the API server rejected is not asked about again within the TTL.
        rejected = mint_token("gone")
        answers = [
            api_client(address, "127.0.0.10").get("/api/v1/", headers=bearer(rejected)) for _ in range(20)
        ]
        assert {a.status_code for a in answers} == {401} and token_reviews() == before + 2


# In this process, through Django's test client: what sits behind the answers above.


@pytest.fixture
def vera(db, settings):
    settings.DEMO = False
    grant("vera", "viewer", namespaces=["team-a"])
    user = User.objects.get(username="vera")
    user.set_password(VERA[1])
    user.save()
    return user


def basic_get(client: Client, username: str, password: str, **meta: str):
    auth = basic(username, password)["Authorization"]
    return client.get("/api/v1/", HTTP_AUTHORIZATION=auth, **meta)


def test_a_refused_attempt_costs_no_hash(vera, monkeypatch):
    hashes = []
    encode = PBKDF2PasswordHasher.encode
    monkeypatch.setattr(
        PBKDF2PasswordHasher,
        "encode",
        lambda self, *args, **kw: hashes.append(1) or encode(self, *args, **kw),
    )
    client = Client(REMOTE_ADDR="192.0.2.10")
    answers = [basic_get(client, "vera", f"guess-{i}").status_code for i in range(5)]
    assert answers == [401] * 5 and len(hashes) == 5  # the free ones are hashed, as any check
    hashes.clear()
    answers = [basic_get(client, "vera", f"guess-{i}").status_code for i in range(40)]
    answers += [basic_get(client, f"user-{i}", "guess").status_code for i in range(40)]
    assert answers.count(429) >= 40 and len(hashes) == answers.count(401), (answers, len(hashes))


def test_x_forwarded_for_is_read_only_from_a_trusted_proxy(vera, settings):
    """Untrusted, the header is the guesser's own claim: each made-up address is still one source."""
    client = Client(REMOTE_ADDR="192.0.2.20")
    answers = [
        basic_get(client, "vera", "nope", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}").status_code
        for i in range(12)
    ]
    assert 429 in answers

    settings.GANGWEB_TRUSTED_PROXIES = ["10.0.0.0/8"]
    proxy = Client(REMOTE_ADDR="10.1.2.3")
    # Behind the proxy: the guesser at 203.0.113.9 claims to be someone else; the proxy appends the truth.
    answers = [
        basic_get(proxy, "vera", "nope", HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.9").status_code
        for i in range(12)
    ]
    assert 429 in answers
    assert basic_get(proxy, *VERA, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 200
    assert basic_get(proxy, *VERA, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 429
