"""TokenReview and SubjectAccessReview, in their real shapes (test tooling).

``POST /apis/authentication.k8s.io/v1/tokenreviews`` answers for the tokens a test registered through
the control API (``ControlClient.add_token``; ``mint_token`` makes one in a service account token's shape); ``POST /apis/authorization.k8s.io/v1/subjectaccessreviews``
evaluates RBAC as the API server's RBAC authorizer does, over the Roles, ClusterRoles, RoleBindings and
ClusterRoleBindings in the store (loaded like any object). Both are logged in the request log, so a test
counts the reviews a client made. Not covered: webhook authorizers, aggregated ClusterRoles,
nonResourceAttributes (always denied), impersonation.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from scheduler.kube.resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES

from . import errors
from .store import ObjectStore

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SUPERUSER_GROUP = "system:masters"


@dataclass
class Tokens:
    """Bearer token -> the ``UserInfo`` a TokenReview answers for it."""

    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, token: str, username: str, groups: list[str] | None = None, uid: str = "") -> dict:
        user = {
            "username": username,
            "uid": uid or f"uid-{username}",
            "groups": [*(groups or []), "system:authenticated"],
        }
        with self.lock:
            self.users[token] = user
        return user

    def remove(self, token: str) -> bool:
        with self.lock:
            return self.users.pop(token, None) is not None

    def clear(self) -> None:
        with self.lock:
            self.users.clear()

    def find(self, token: str) -> dict | None:
        with self.lock:
            return self.users.get(token)


def _segment(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint_token(subject: str) -> str:
    """A new bearer token shaped like a service account's (a signed JWT: header, claims, signature) for
    ``add_token``. Nothing here checks its signature: TokenReview answers for the tokens added."""
    header = {"alg": "RS256", "kid": "kubetestserver"}
    claims = {"iss": "https://kubernetes.default.svc", "sub": subject, "jti": secrets.token_hex(8)}
    return ".".join(
        (
            _segment(json.dumps(header).encode()),
            _segment(json.dumps(claims).encode()),
            _segment(secrets.token_bytes(256)),
        )
    )


def handle(store: ObjectStore, tokens: Tokens, method: str, path: str, body: Any) -> tuple[int, dict] | None:
    """The answer for a review path, or None for any other path."""
    if path.rstrip("/") not in (TOKEN_REVIEWS, SUBJECT_ACCESS_REVIEWS):
        return None
    if method != "POST":
        raise errors.ApiError(405, "MethodNotAllowed", f"{method} is not supported on reviews (create only)")
    if not isinstance(body, dict):
        raise errors.bad_request("a request body is required")
    if path.rstrip("/") == TOKEN_REVIEWS:
        return 201, token_review(tokens, body)
    return 201, subject_access_review(store, body)


def token_review(tokens: Tokens, body: dict) -> dict:
    spec = body.get("spec") or {}
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.invalid("TokenReview.authentication.k8s.io is invalid: spec.token: Required value")
    user = tokens.find(token)
    status: dict[str, Any] = {"user": {}}
    if user is not None:
        status = {"authenticated": True, "user": user, "audiences": spec.get("audiences") or []}
    else:
        status["error"] = "[invalid bearer token, token lookup failed]"
    return {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def subject_access_review(store: ObjectStore, body: dict) -> dict:
    spec = body.get("spec") or {}
    user, groups = spec.get("user") or "", list(spec.get("groups") or [])
    attributes = spec.get("resourceAttributes")
    if not user and not groups:
        raise errors.invalid(
            "SubjectAccessReview.authorization.k8s.io is invalid: spec.user: at least one of user or group must be specified"
        )
    if not isinstance(attributes, dict) and not spec.get("nonResourceAttributes"):
        raise errors.invalid(
            "SubjectAccessReview.authorization.k8s.io is invalid: spec.resourceAttributes: exactly one of "
            "nonResourceAttributes or resourceAttributes must be specified"
        )
    allowed, reason = (
        (False, "") if not isinstance(attributes, dict) else _authorize(store, user, groups, attributes)
    )
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return {
        "kind": "SubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def _bound(subjects: list[dict], user: str, groups: list[str], binding_namespace: str) -> bool:
    for subject in subjects or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user:
            return True
        if kind == "Group" and name in groups:
            return True
        if kind == "ServiceAccount":
            namespace = subject.get("namespace") or binding_namespace
            if user == f"system:serviceaccount:{namespace}:{name}":
                return True
    return False


def _rule_allows(rule: dict, attributes: dict) -> bool:
    verb, group = attributes.get("verb") or "", attributes.get("group") or ""
    resource = attributes.get("resource") or ""
    if attributes.get("subresource"):
        resource = f"{resource}/{attributes['subresource']}"
    verbs, groups, resources = (
        rule.get("verbs") or [],
        rule.get("apiGroups") or [],
        rule.get("resources") or [],
    )
    names = rule.get("resourceNames") or []
    return (
        (verb in verbs or "*" in verbs)
        and (group in groups or "*" in groups)
        and (resource in resources or "*" in resources)
        and (not names or attributes.get("name") in names)
    )


def _rules(store: ObjectStore, role_ref: dict, namespace: str) -> list[dict]:
    kind, name = role_ref.get("kind"), role_ref.get("name") or ""
    role = (
        store.try_get(CLUSTER_ROLES, None, name)
        if kind == "ClusterRole"
        else store.try_get(ROLES, namespace, name)
        if kind == "Role"
        else None
    )
    return (role or {}).get("rules") or []


def _authorize(store: ObjectStore, user: str, groups: list[str], attributes: dict) -> tuple[bool, str]:
    if SUPERUSER_GROUP in groups:
        return True, f"allowed: member of {SUPERUSER_GROUP}"
    namespace = attributes.get("namespace") or ""
    for binding in store.list(CLUSTER_ROLE_BINDINGS):
        rules = _rules(store, binding.get("roleRef") or {}, "")
        if _bound(binding.get("subjects"), user, groups, "") and any(
            _rule_allows(r, attributes) for r in rules
        ):
            return True, f'RBAC: allowed by ClusterRoleBinding "{binding["metadata"]["name"]}"'
    if namespace:
        for binding in store.list(ROLE_BINDINGS, namespace):
            if _bound(binding.get("subjects"), user, groups, namespace):
                rules = _rules(store, binding.get("roleRef") or {}, namespace)
                if any(_rule_allows(rule, attributes) for rule in rules):
                    name = binding["metadata"]["name"]
                    return True, f'RBAC: allowed by RoleBinding "{name}" of namespace "{namespace}"'
    return False, ""
