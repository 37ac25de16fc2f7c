"""Who acted on a preemption request, as a typed identity: kind and name (docs/design.md, "Actors").

A name alone is ambiguous: a Kubernetes user ``oper-b`` and the local user ``oper-b`` are two people, so
the ledger and the API never record one without its kind. Written ``kind:name`` (``local:oper-b``,
``token:oper-b``, ``k8s-user:oper-b``, ``k8s-sa:team-a/ci``, ``gangweb:gangweb``); ``display`` is the
same in words for messages and pages.
"""

from __future__ import annotations

from dataclasses import dataclass

LOCAL = "local"  # a local user signed in with a password (session or Basic)
TOKEN = "token"  # a local user's gangweb API token (``manage.py access token``)
K8S_USER = "k8s-user"  # a Kubernetes user, by TokenReview
K8S_SA = "k8s-sa"  # a Kubernetes service account, by TokenReview; named namespace/name
GANGWEB = "gangweb"  # gangweb itself: an approval that expired, a namespace that left approve mode
UNKNOWN = "unknown"  # recorded before identities were typed, and the kind cannot be told
ANONYMOUS = "anonymous"  # a signed-out reader (the public demo's); it reads, never acts

KINDS = {
    LOCAL: "local user",
    TOKEN: "gangweb token of",
    K8S_USER: "Kubernetes user",
    K8S_SA: "Kubernetes service account",
    GANGWEB: "",
    UNKNOWN: "(kind unknown)",
    ANONYMOUS: "signed-out reader",
}

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Actor:
    kind: str
    name: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown actor kind {self.kind!r} (one of {', '.join(KINDS)})")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def display(self) -> str:
        """In words: ``Kubernetes user oper-b``, ``local user oper-b``, ``gangweb``."""
        words = KINDS[self.kind]
        if self.kind == UNKNOWN:
            return f"{self.name} {words}"
        return f"{words} {self.name}" if words else self.name

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "display": self.display}


GANGWEB_ITSELF = Actor(GANGWEB, "gangweb")


def kubernetes(username: str) -> Actor:
    """A Kubernetes identity by its TokenReview username: ``system:serviceaccount:ns:name`` is a service
    account (named ``ns/name``), anything else a user."""
    if username.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace, _, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
        if namespace and name:
            return Actor(K8S_SA, f"{namespace}/{name}")
    return Actor(K8S_USER, username)


def stored(kind: str, name: str) -> Actor | None:
    """The actor of a ledger row's two columns; None when nobody is recorded."""
    if not name:
        return None
    return Actor(kind if kind in KINDS else UNKNOWN, name)
