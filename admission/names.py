"""Kubernetes object-name rules (apimachinery's validation), in one place for the whole webhook."""

from __future__ import annotations

import re
from typing import TypeGuard

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_dns1123_label(name: object) -> TypeGuard[str]:
    """Namespaces, template names: at most 63 of [a-z0-9-], alphanumeric at both ends."""
    return isinstance(name, str) and _DNS1123_LABEL.fullmatch(name) is not None


def is_dns1035_label(name: object) -> TypeGuard[str]:
    """Service names: a DNS-1123 label that starts with a letter."""
    return isinstance(name, str) and _DNS1035_LABEL.fullmatch(name) is not None


def is_dns1123_subdomain(name: object) -> TypeGuard[str]:
    """Most object names (PodGroups included): dot-separated labels, at most 253 characters."""
    return isinstance(name, str) and len(name) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(name) is not None
