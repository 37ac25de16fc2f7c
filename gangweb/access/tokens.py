"""gangweb API tokens: ``gwt_`` + 43 URL-safe characters (256 random bits), stored as SHA-256 digests.

The prefix tells a gangweb token from a Kubernetes one (those are JWTs or opaque strings without it),
so ``authentication`` knows which to look up and which to hand to TokenReview.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from gangweb.access.models import ApiToken

PREFIX = "gwt_"
MAX_EXPIRES_DAYS = 3650


class TokenError(ValueError):
    """Bad input to ``issue``/``revoke``: nothing was written."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_gangweb_token(token: str) -> bool:
    return token.startswith(PREFIX)


def _user(username: str):
    User = get_user_model()
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist:
        raise TokenError(
            f"no user {username!r}: create it first with `manage.py access grant {username} --role ...`"
        ) from None


def issue(username: str, *, expires_days: int | None = None) -> str:
    """A new token for ``username`` (printed once; only its digest is kept)."""
    if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRES_DAYS:
        raise TokenError(f"--expires-days must be between 1 and {MAX_EXPIRES_DAYS}, got {expires_days}")
    user = _user(username)
    token = PREFIX + secrets.token_urlsafe(32)
    expires = timezone.now() + timedelta(days=expires_days) if expires_days else None
    ApiToken.objects.create(
        user=user, digest=digest(token), hint=token[len(PREFIX) : len(PREFIX) + 6], expires_at=expires
    )
    return token


def revoke(username: str) -> int:
    """Revoke every usable token of ``username``; answers how many."""
    user = _user(username)
    with transaction.atomic():
        return ApiToken.objects.usable().filter(user=user).update(revoked_at=timezone.now())


def user_for(token: str):
    """The active user a usable token belongs to, else None (unknown, expired, revoked, inactive user)."""
    found = ApiToken.objects.usable().select_related("user").filter(digest=digest(token)).first()
    if found is None or not found.user.is_active:
        return None
    now = timezone.now()
    if found.last_used_at is None or now - found.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)  # at most one write a minute
    return found.user
