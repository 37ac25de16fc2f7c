"""Kubernetes identities: TokenReview says who a bearer token is, SubjectAccessReview what it may do.

Role per namespace (docs/design.md, "Access"): may ``list podgroups.scheduling.k8s.io`` there → viewer;
may also ``create pods/eviction`` there → operator. An answer that lets in is cached for
``GANGWEB_K8S_REVIEW_TTL_SECONDS``, one that does not for ``GANGWEB_K8S_REVIEW_NEGATIVE_TTL_SECONDS`` (at
most the TTL), per token and per identity, shared by every web process through Redis when ``REDIS_URL`` is
set (``gangweb.access.sharedcache``); in the process, the caches are bounded by size and push out their
least recently used entry; tokens that did not authenticate have a cache of their own, so a flood of them
never pushes out an identity.

Unknown tokens cost the API server little: a token not shaped like a Kubernetes token
(``is_kubernetes_token``) is never reviewed, and reviews of tokens not in the cache are charged to their
source address (``gangweb.access.throttle``; a review that authenticates is refunded).

"Every namespace I may see" costs no review per namespace of the cluster:
1. one cluster-wide pair of reviews (namespace ``""``): an identity allowed there (a ClusterRoleBinding,
   the usual case for platform tools) sees every namespace, and nothing more is asked;
2. otherwise the candidates are the namespaces where a RoleBinding names the identity (its user, one of
   its groups, or its service account), from one paged list of RoleBindings shared by every identity
   of the process and refreshed once per TTL; only those are reviewed, in parallel, then cached;
3. a namespace asked about directly (a detail page, ``?namespace=``) is reviewed on its own, so access
   granted by a non-RBAC authorizer still works where it is asked for.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from gangweb.access import throttle
from gangweb.access.scope import OPERATOR, VIEWER, Scope
from gangweb.access.sharedcache import SharedCache
from scheduler.preemption import actors

logger = logging.getLogger(__name__)

# (verb, group, resource, subresource) -> the role it grants, checked in this order.
VIEW_CHECK = ("list", "scheduling.k8s.io", "podgroups", "")
OPERATE_CHECK = ("create", "", "pods", "eviction")
ALL_NAMESPACES = ""
REVIEW_THREADS = 8


class ReviewUnavailable(Exception):
    """The API server did not answer a review (down, forbidden to gangweb, timed out)."""


class NoKubernetesApi(ReviewUnavailable):
    """gangweb runs on a simulated cluster: there is no API server that could review a token."""


@dataclass(frozen=True)
class Identity:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.username}|{self.uid}|{','.join(sorted(self.groups))}"


TOKENS_KEPT = 10_000
DECISIONS_KEPT = 50_000
MAX_TOKEN_CHARS = 16 * 1024
_BOOTSTRAP_TOKEN = re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}")
_JWT = re.compile(r"([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
# Amazon EKS's IAM authenticator (what `aws eks get-token` prints): a presigned URL, base64url.
_EKS_TOKEN = re.compile(r"k8s-aws-v1\.[A-Za-z0-9_-]{16,}")
# RFC 7235 token68: what a bearer credential may be at all (static token files, webhook authenticators).
_TOKEN68 = re.compile(r"[A-Za-z0-9._~+/-]{16,}=*")

_tokens = SharedCache("token", TOKENS_KEPT)  # token -> the Identity TokenReview answered, as a list
_rejected = SharedCache("rejected", TOKENS_KEPT)  # token -> True: TokenReview did not authenticate it
_decisions = SharedCache("decision", DECISIONS_KEPT)  # identity, namespace, check -> allowed
_bindings: dict[str, Any] = {"at": -1e18, "index": {}}
_bindings_lock = threading.Lock()


def ttl() -> float:
    return float(settings.GANGWEB_K8S_REVIEW_TTL_SECONDS)


def negative_ttl() -> float:
    """How long a "no" is kept: shorter than a "yes", so that a new grant or token is seen sooner."""
    return min(ttl(), float(settings.GANGWEB_K8S_REVIEW_NEGATIVE_TTL_SECONDS))


def clear_caches() -> None:
    _tokens.clear()
    _rejected.clear()
    _decisions.clear()
    with _bindings_lock:
        _bindings.update(at=-1e18, index={})


def _api_client():
    """The process's Kubernetes client (``scheduler.kube``), or None when gangweb runs on a simulation."""
    from scheduler.kube import KubeCluster
    from scheduler.preemption.runtime import get_cluster

    cluster = get_cluster()
    return cluster.rest_client() if isinstance(cluster, KubeCluster) else None


def _post(create: Callable[[Any], Any]) -> dict:
    from kubernetes.client.exceptions import ApiException

    from scheduler.kube.apis import read_json

    api = _api_client()
    if api is None:
        raise NoKubernetesApi("no Kubernetes API configured (GANGWEB_CLUSTER is not kube)")
    try:
        return read_json(create(api))
    except ApiException as exc:
        raise ReviewUnavailable(f"{exc.status} {exc.reason}") from exc
    except Exception as exc:  # connection refused, timeouts
        raise ReviewUnavailable(f"{type(exc).__name__}: {exc}") from exc


def _timeout() -> tuple[float, float]:
    read = float(settings.GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS)
    return (min(5.0, read), read)


def is_kubernetes_token(token: str) -> bool:
    """Shaped like a token an API server issues: a signed JWT (service account, OIDC) whose header is a
    JSON object naming its algorithm, a bootstrap token or an EKS token; with
    ``GANGWEB_K8S_OPAQUE_TOKENS`` any token68 credential. Told without a review."""
    if len(token) > MAX_TOKEN_CHARS:
        return False
    if _BOOTSTRAP_TOKEN.fullmatch(token) or _EKS_TOKEN.fullmatch(token):
        return True
    jwt = _JWT.fullmatch(token)
    if jwt is None:
        return bool(settings.GANGWEB_K8S_OPAQUE_TOKENS) and _TOKEN68.fullmatch(token) is not None
    header = jwt.group(1)
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(decoded, dict) and isinstance(decoded.get("alg"), str)


def review_token(token: str, source: str) -> Identity | None:
    """Who ``token`` is per TokenReview, or None when the API server does not authenticate it.

    A token in neither cache is reviewed only if its ``source`` (``throttle.source_of``) may:
    ``throttle.Refused`` otherwise."""
    from kubernetes import client

    key = token
    hit, known = _tokens.get(key)
    if hit:
        username, uid, groups = known
        return Identity(username, uid, tuple(groups))
    if _rejected.get(key)[0]:
        return None
    attempt = throttle.review_attempt(source)
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    try:
        answer = _post(
            lambda api: client.AuthenticationV1Api(api).create_token_review(
                body, _preload_content=False, _request_timeout=_timeout()
            )
        )
    except BaseException:  # no verdict: not the client's failure
        attempt.refund()
        raise
    status = answer.get("status") or {}
    user = status.get("user") or {}
    if status.get("authenticated") and user.get("username"):
        identity = Identity(user["username"], user.get("uid") or "", tuple(user.get("groups") or ()))
        _tokens.put(key, [identity.username, identity.uid, list(identity.groups)], ttl())
        attempt.refund()
        return identity
    _rejected.put(key, True, negative_ttl())
    attempt.fail()
    return None


def allowed(identity: Identity, namespace: str, check: tuple[str, str, str, str]) -> bool:
    """One SubjectAccessReview (cached): may ``identity`` do ``check`` in ``namespace`` ("" = everywhere)?"""
    from kubernetes import client

    key = json.dumps([identity.key, namespace, *check])
    hit, answer = _decisions.get(key)
    if hit:
        return answer
    verb, group, resource, subresource = check
    attributes = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
    if subresource:
        attributes["subresource"] = subresource
    spec: dict[str, Any] = {
        "user": identity.username,
        "groups": list(identity.groups),
        "resourceAttributes": attributes,
    }
    if identity.uid:
        spec["uid"] = identity.uid
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    result = _post(
        lambda api: client.AuthorizationV1Api(api).create_subject_access_review(
            body, _preload_content=False, _request_timeout=_timeout()
        )
    )
    answer = bool((result.get("status") or {}).get("allowed"))
    _decisions.put(key, answer, ttl() if answer else negative_ttl())
    return answer


def role_in(identity: Identity, namespace: str) -> str | None:
    """viewer, operator or None in ``namespace`` ("" asks about every namespace at once)."""
    if not allowed(identity, namespace, VIEW_CHECK):
        return None
    return OPERATOR if allowed(identity, namespace, OPERATE_CHECK) else VIEWER


def _subject_keys(identity: Identity) -> list[tuple[str, str]]:
    keys = [("User", identity.username), *(("Group", g) for g in identity.groups)]
    prefix = "system:serviceaccount:"
    if identity.username.startswith(prefix):
        keys.append(("ServiceAccount", identity.username[len(prefix) :]))  # "namespace:name"
    return keys


def _binding_index() -> dict[tuple[str, str], frozenset[str]]:
    """(subject kind, name) -> namespaces with a RoleBinding naming it; one list per TTL per process."""
    from scheduler.kube.apis import list_raw
    from scheduler.kube.resources import ROLE_BINDINGS

    with _bindings_lock:
        if time.monotonic() - _bindings["at"] < ttl():
            return _bindings["index"]
        api = _api_client()
        index: dict[tuple[str, str], set[str]] = {}
        if api is not None:
            try:
                items, _ = list_raw(api, ROLE_BINDINGS, timeout=_timeout())
            except Exception as exc:  # forbidden or down: fall back to namespaces asked about directly
                logger.warning("cannot list RoleBindings for Kubernetes identities' namespaces: %s", exc)
                items = []
            for binding in items:
                namespace = (binding.get("metadata") or {}).get("namespace") or ""
                for subject in binding.get("subjects") or []:
                    kind, name = subject.get("kind"), subject.get("name") or ""
                    if kind == "ServiceAccount":
                        name = f"{subject.get('namespace') or namespace}:{name}"
                    index.setdefault((kind, name), set()).add(namespace)
        _bindings.update(at=time.monotonic(), index={k: frozenset(v) for k, v in index.items()})
        return _bindings["index"]


def candidate_namespaces(identity: Identity) -> list[str]:
    index = _binding_index()
    return sorted(set().union(*(index.get(key, frozenset()) for key in _subject_keys(identity))))


def roles_in(identity: Identity, namespaces: Iterable[str]) -> dict[str, str]:
    """Roles in several namespaces, the uncached ones reviewed in parallel."""
    names = list(dict.fromkeys(namespaces))
    if len(names) <= 1:
        return {ns: role for ns in names if (role := role_in(identity, ns))}
    with ThreadPoolExecutor(max_workers=min(REVIEW_THREADS, len(names))) as pool:
        roles = list(pool.map(lambda ns: role_in(identity, ns), names))
    return {ns: role for ns, role in zip(names, roles, strict=True) if role}


class NamespaceRoles(Mapping[str, str]):
    """The ``per_namespace`` of a Kubernetes identity's scope: a lookup reviews that one namespace;
    iterating reviews the RoleBinding candidates once (both cached)."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self._known: dict[str, str | None] = {}
        self._listed: dict[str, str] | None = None

    def __getitem__(self, namespace: str) -> str:
        if namespace not in self._known:
            self._known[namespace] = role_in(self.identity, namespace)
        role = self._known[namespace]
        if role is None:
            raise KeyError(namespace)
        return role

    def _all(self) -> dict[str, str]:
        if self._listed is None:
            self._listed = roles_in(self.identity, candidate_namespaces(self.identity))
            self._known.update(self._listed)
        return self._listed

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


@dataclass(frozen=True)
class KubernetesScope(Scope):
    identity: Identity | None = field(default=None, compare=False)

    @property
    def actor(self) -> actors.Actor:
        """A Kubernetes user or service account: never the local user of the same name."""
        return actors.kubernetes(self.user)


def scope_of(identity: Identity) -> Scope:
    everywhere = role_in(identity, ALL_NAMESPACES)
    if everywhere == OPERATOR:
        return KubernetesScope(user=identity.username, everywhere=OPERATOR, identity=identity)
    # A viewer everywhere may still operate in single namespaces: those are looked up lazily too.
    return KubernetesScope(
        user=identity.username,
        everywhere=everywhere,
        per_namespace=NamespaceRoles(identity),
        identity=identity,
    )


class KubernetesUser:
    """``request.user`` for a Kubernetes identity: authenticated, not a row in the database."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.username = identity.username
        # Throttles and logs key users by pk: one per Kubernetes identity, never shared with a local user.
        self.pk = self.id = f"k8s:{identity.username}"
        self._scope: Scope | None = None

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username

    @property
    def scope(self) -> Scope:
        if self._scope is None:
            self._scope = scope_of(self.identity)
        return self._scope
