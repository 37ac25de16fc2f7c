"""Receivers that end live sessions: sign-out, a changed grant, a deactivated or deleted user."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from gangweb.access import sessions
from gangweb.access.models import Grant


@receiver(user_logged_out)
def _signed_out(sender, request=None, user=None, **kwargs) -> None:
    session = getattr(request, "session", None)
    sessions.end_session(getattr(session, "session_key", None))


@receiver(post_save, sender=Grant)
@receiver(post_delete, sender=Grant)
def _grant_changed(sender, instance: Grant, **kwargs) -> None:
    sessions.scope_changed(instance.user_id)


User = get_user_model()


@receiver(pre_save, sender=User)
def _remember_active(sender, instance, **kwargs) -> None:
    if instance.pk:
        before = sender.objects.filter(pk=instance.pk).values("is_active", "is_superuser").first() or {}
        instance._gangweb_was = before


@receiver(post_save, sender=User)
def _user_changed(sender, instance, created: bool, **kwargs) -> None:
    before = getattr(instance, "_gangweb_was", None)
    if created or not before:
        return
    if before.get("is_active") and not instance.is_active:
        sessions.end_for_user(instance.pk, "account deactivated")
    elif before.get("is_superuser") != instance.is_superuser:
        sessions.scope_changed(instance.pk, "superuser status changed")
