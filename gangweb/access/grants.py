"""Granting roles to local users: the one place a ``Grant`` is written (``manage.py access grant``).

A changed grant ends the user's open websockets once the transaction commits (``sessions.end_for_user``,
through the ``post_save`` receiver in ``signals``), so an open tab never keeps the scope it had.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from gangweb.access.models import Grant
from gangweb.access.scope import ADMIN, ROLES, Scope
from scheduler.preemption import actors

# A Kubernetes namespace name (RFC 1123 label).
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class GrantError(ValueError):
    """Bad input to ``grant``: nothing was written."""


@dataclass(frozen=True)
class GrantResult:
    username: str
    created_user: bool
    before: str | None
    after: str


def parse_namespaces(text: str) -> list[str]:
    names = sorted({part.strip() for part in text.split(",") if part.strip()})
    if not names:
        raise GrantError("--namespaces needs at least one namespace, e.g. --namespaces team-a,team-b")
    bad = [n for n in names if not NAMESPACE.match(n)]
    if bad:
        raise GrantError(
            f"not a Kubernetes namespace name: {', '.join(bad)} (lower-case letters, digits, '-')"
        )
    return names


def describe(grant: Grant | None) -> str | None:
    if grant is None:
        return None
    where = "all namespaces" if grant.all_namespaces else "namespaces " + ",".join(grant.namespaces)
    return f"{grant.role} in {where}"


def grant(
    username: str, role: str, *, namespaces: list[str] | None = None, all_namespaces: bool = False
) -> GrantResult:
    """Create or update ``username`` with ``role`` in ``namespaces`` (or everywhere)."""
    username = (username or "").strip()
    if not username:
        raise GrantError("a user name is required")
    if role not in ROLES:
        raise GrantError(f"--role must be one of {', '.join(ROLES)}, got {role!r}")
    if all_namespaces == bool(namespaces):
        raise GrantError("give exactly one of --namespaces a,b or --all-namespaces")
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.select_for_update().get_or_create(username=username)
        if created:
            user.set_unusable_password()  # a password is set with `manage.py changepassword USER`
            user.save()
        current = Grant.objects.select_for_update().filter(user=user).first()
        before = describe(current)
        current = current or Grant(user=user)
        current.role = role
        current.all_namespaces = all_namespaces
        current.namespaces = [] if all_namespaces else list(namespaces or [])
        current.save()
        return GrantResult(username, created, before, describe(current) or "")


def scope_of_user(user) -> Scope:
    """A signed-in local user's scope: its grant; a superuser without one is admin everywhere. Its kind
    is ``token`` when the user came with a gangweb token (``authentication``), else ``local``."""
    name = user.get_username()
    kind = getattr(user, "gangweb_actor_kind", actors.LOCAL)
    try:
        held = user.gangweb_grant
    except Grant.DoesNotExist:
        held = None
    if held is None:
        return (
            Scope(user=name, everywhere=ADMIN, kind=kind)
            if user.is_superuser
            else Scope(user=name, kind=kind)
        )
    if held.all_namespaces:
        return Scope(user=name, everywhere=held.role, kind=kind)
    return Scope(user=name, per_namespace={ns: held.role for ns in held.namespaces}, kind=kind)
