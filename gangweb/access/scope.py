"""A reader's scope: which role it holds in which namespace. Every page, API answer, websocket message
and aggregate is cut to a scope (docs/design.md, "Access").

This is the interface the API, the dashboard and the live stream use; how a scope is found for a
request (local users with a role, gangweb tokens, Kubernetes identities through TokenReview and
SubjectAccessReview) is the business of ``scope_for``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.preemption import actors

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)
_RANK = {role: rank for rank, role in enumerate(ROLES, start=1)}

# The least role an action needs, in the namespace it touches.
ACTIONS = {
    "read": VIEWER,
    "simulate": VIEWER,
    "approve": OPERATOR,
    "reject": OPERATOR,
    "cancel": OPERATOR,
    "admin": ADMIN,
}


def at_least(role: str | None, needed: str) -> bool:
    return role is not None and _RANK[role] >= _RANK[needed]


@dataclass(frozen=True)
class Scope:
    """``everywhere`` is the role held in every namespace (``None``: none); ``per_namespace`` adds roles
    in single namespaces. A namespace's role is the higher of the two. ``kind`` says how the reader
    signed in (``scheduler.preemption.actors``: local, token; signed-out readers are anonymous)."""

    user: str
    everywhere: str | None = None
    per_namespace: Mapping[str, str] = field(default_factory=dict)
    kind: str = actors.LOCAL

    @property
    def actor(self) -> actors.Actor:
        """Who this reader is, as the ledger records it when it acts."""
        return actors.Actor(self.kind, self.user)

    @property
    def signed_in(self) -> bool:
        return self.kind != actors.ANONYMOUS

    def role_in(self, namespace: str) -> str | None:
        local = self.per_namespace.get(namespace)
        if local is None or (self.everywhere and _RANK[self.everywhere] >= _RANK[local]):
            return self.everywhere
        return local

    def sees(self, namespace: str) -> bool:
        return self.role_in(namespace) is not None

    def may(self, action: str, namespace: str | None = None) -> bool:
        """``namespace=None`` asks about the cluster as a whole (admin work, all-namespace aggregates)."""
        needed = ACTIONS[action]
        if namespace is None:
            return at_least(self.everywhere, needed)
        return at_least(self.role_in(namespace), needed)

    @property
    def all_namespaces(self) -> bool:
        return self.everywhere is not None

    @property
    def authenticated(self) -> bool:
        return self.everywhere is not None or bool(self.per_namespace)

    def namespaces(self) -> frozenset[str] | None:
        """The namespaces this scope sees, or ``None`` for all of them."""
        return None if self.all_namespaces else frozenset(self.per_namespace)

    def visible(self, namespaces: Iterable[str]) -> list[str]:
        return [ns for ns in namespaces if self.sees(ns)]

    def filter(self, queryset: Any, field: str = "namespace") -> Any:
        """``queryset`` cut to the namespaces this scope sees (``field`` names the namespace column)."""
        if self.all_namespaces:
            return queryset
        return queryset.filter(**{f"{field}__in": sorted(self.per_namespace)})


NOBODY = Scope(user="", kind=actors.ANONYMOUS)


# The public demo's reader: in the demo (settings.DEMO) the pages, the API and the live stream are
# readable without a login, by this one reader (``scope_for``, the one rule for it).
DEMO_READER = Scope(user="anonymous", everywhere=VIEWER, kind=actors.ANONYMOUS)


def scope_for(request: Any) -> Scope:
    """The scope of whoever made ``request``: an HTTP or DRF request, or a user (a websocket scope's).

    A Kubernetes identity (bearer token through TokenReview) has the scope its SubjectAccessReviews
    give (``gangweb.access.kube``); a local user its grant (``manage.py access grant``), a superuser
    without one admin everywhere; a signed-out reader none, but in the demo, where it is ``DEMO_READER``
    (a signed-in user keeps the scope of its grant there too). The scope is computed once per request
    (kept on the user object)."""
    user = getattr(request, "user", request)
    if user is None or not getattr(user, "is_authenticated", False):
        from django.conf import settings

        return DEMO_READER if getattr(settings, "DEMO", False) else NOBODY
    cached = getattr(user, "scope", None) if hasattr(type(user), "scope") else None
    if isinstance(cached, Scope):  # gangweb.access.kube.KubernetesUser
        return cached
    cached = getattr(user, "_gangweb_scope", None)
    if cached is None:
        from gangweb.access.grants import scope_of_user

        cached = scope_of_user(user)
        try:
            user._gangweb_scope = cached
        except AttributeError:
            pass
    return cached
