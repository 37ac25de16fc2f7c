"""Local users' roles and API tokens (docs/design.md, "Access").

A user's ``Grant`` says which role it holds and where (a list of namespaces, or all of them); its
``ApiToken`` rows are the bearer tokens ``manage.py access token`` printed, stored as SHA-256 digests
only. Writes go through ``gangweb.access.grants`` (which also ends the user's live sessions).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from gangweb.access.scope import ROLES


class Grant(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gangweb_grant"
    )
    role = models.CharField(max_length=16, choices=[(r, r) for r in ROLES])
    all_namespaces = models.BooleanField(default=False)
    namespaces = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        where = "all namespaces" if self.all_namespaces else ",".join(self.namespaces) or "no namespace"
        return f"{self.user.get_username()}: {self.role} in {where}"


class ApiTokenQuerySet(models.QuerySet):
    def usable(self) -> ApiTokenQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gangweb_tokens"
    )
    # SHA-256 (hex) of the whole token; the token itself is printed once and never stored.
    digest = models.CharField(max_length=64, unique=True)
    # The first characters after the prefix, to tell tokens apart in the admin and the ledger.
    hint = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["user", "revoked_at"])]

    def __str__(self) -> str:
        return f"token {self.hint}… of {self.user.get_username()}"
