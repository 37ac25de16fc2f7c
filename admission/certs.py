"""TLS for the webhook: a private CA and a serving certificate kube-apiserver accepts.

kube-apiserver dials the Service and verifies the name ``<service>.<namespace>.svc`` against the
certificate's DNS SubjectAlternativeNames (the CommonName has been ignored since Kubernetes 1.19), using
the ``caBundle`` of the webhook configuration. ``ensure_certificates`` is idempotent: it reuses what
is still valid, renews the serving certificate ``renew_before`` ahead of expiry (or when its names no
longer match), and renews the CA likewise (which changes ``caBundle``: re-run ``webhook config``).
Files are replaced atomically, so a server reloading them never reads half a certificate.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from admission.names import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
# The client certificate kube-apiserver presents to the webhook (``webhook serve --client-ca``).
CLIENT_CERT, CLIENT_KEY = "client.crt", "client.key"
# Backdated: clocks of the apiserver and this host may differ by a little.
CLOCK_SKEW = dt.timedelta(minutes=5)


# Service names are DNS-1035 labels (a letter first); namespaces are DNS-1123 labels. Used with fullmatch.


class CertificateError(Exception):
    """Bad input or an unusable directory; the message says what to change (no traceback needed)."""


def check_service_and_namespace(service: str, namespace: str) -> None:
    """Raise CertificateError unless both can be Kubernetes names (they become the DNS SANs)."""
    if not is_dns1035_label(service):
        raise CertificateError(
            f"invalid service name {service!r}: a Service name is at most 63 characters of a-z, 0-9 and '-', "
            "starting with a letter and ending with a letter or digit (DNS-1035 label)"
        )
    if not is_dns1123_label(namespace):
        raise CertificateError(
            f"invalid namespace {namespace!r}: a namespace is at most 63 characters of a-z, 0-9 and '-', "
            "starting and ending with a letter or digit (DNS-1123 label)"
        )


def dns_names(service: str, namespace: str) -> list[str]:
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


@dataclass(frozen=True)
class KeyPair:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def issue_ca(common_name: str, days: int, now: dt.datetime | None = None) -> KeyPair:
    now = now or _now()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert, key)


def issue_serving(
    ca: KeyPair, names: list[str], days: int, now: dt.datetime | None = None, *, ips: tuple[str, ...] = ()
) -> KeyPair:
    """A serving certificate (serverAuth only) for ``names`` (the first is the CommonName) and ``ips``:
    the webhook's, and kube-apiserver's of hack/cluster (dialled at 127.0.0.1)."""
    return _issue_leaf(ca, names, ExtendedKeyUsageOID.SERVER_AUTH, days, now, ips=ips)


def issue_client(
    ca: KeyPair, name: str, days: int, now: dt.datetime | None = None, *, organization: str | None = None
) -> KeyPair:
    """A client certificate (clientAuth only) with ``name`` as CommonName and DNS SubjectAlternativeName:
    what kube-apiserver presents to the webhook when its AdmissionConfiguration says so. kube-apiserver
    reads ``organization`` as the user's group (hack/cluster's administrator is in ``system:masters``)."""
    return _issue_leaf(ca, [name], ExtendedKeyUsageOID.CLIENT_AUTH, days, now, organization=organization)


def _issue_leaf(
    ca: KeyPair,
    names: list[str],
    usage: x509.ObjectIdentifier,
    days: int,
    now: dt.datetime | None,
    *,
    ips: tuple[str, ...] = (),
    organization: str | None = None,
) -> KeyPair:
    """A leaf certificate signed by ``ca``: ``names`` (and ``ips``) as SANs, digital signature, one extended
    usage."""
    now = now or _now()
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, names[0])]
    if organization:
        subject.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + dt.timedelta(days=days), ca.cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(cert, key)


def client_ca_problem(path: Path) -> str:
    """Why ``path`` cannot serve as the client CA of ``webhook serve`` ("" when it can)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return f"cannot read it: {error.strerror or error}"
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        found = []
    return "" if found else "it holds no PEM certificate"


def san_names(cert: x509.Certificate) -> list[str]:
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        )
    except x509.ExtensionNotFound:
        return []


def needs_renewal(cert: x509.Certificate, renew_before: dt.timedelta, now: dt.datetime | None = None) -> bool:
    return cert.not_valid_after_utc - (now or _now()) <= renew_before


def _load(directory: Path, cert_name: str, key_name: str) -> KeyPair | None:
    try:
        cert = x509.load_pem_x509_certificate((directory / cert_name).read_bytes())
        key = serialization.load_pem_private_key((directory / key_name).read_bytes(), password=None)
    except (OSError, ValueError, TypeError, UnsupportedAlgorithm):
        return None  # missing, unreadable, corrupt or password-protected: issue a new one
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return KeyPair(cert, key)


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class CertificateSet:
    ca: KeyPair
    serving: KeyPair
    issued_ca: bool
    issued_serving: bool


def ensure_certificates(
    directory: Path,
    service: str,
    namespace: str,
    *,
    days: int = 365,
    ca_days: int = 3650,
    renew_before: dt.timedelta = dt.timedelta(days=30),
    force: bool = False,
    now: dt.datetime | None = None,
) -> CertificateSet:
    """Make sure ``directory`` holds a valid CA and serving certificate for the service.

    Unreadable or corrupt files are replaced; bad names and unusable directories raise CertificateError.
    """
    check_service_and_namespace(service, namespace)
    now = now or _now()
    try:
        return _ensure(directory, service, namespace, days, ca_days, renew_before, force, now)
    except OSError as error:
        raise CertificateError(
            f"cannot write the certificates to {directory}: {error.strerror or error}"
        ) from error


def _ensure(
    directory: Path,
    service: str,
    namespace: str,
    days: int,
    ca_days: int,
    renew_before: dt.timedelta,
    force: bool,
    now: dt.datetime,
) -> CertificateSet:
    if directory.exists() and not directory.is_dir():
        raise CertificateError(
            f"cannot write the certificates to {directory}: it exists and is not a directory"
        )
    directory.mkdir(parents=True, exist_ok=True)
    for name in (CA_CERT, CA_KEY, TLS_CERT, TLS_KEY):
        if (directory / name).is_dir():
            raise CertificateError(
                f"cannot write the certificates to {directory}: {directory / name} is a directory"
            )
    names = dns_names(service, namespace)
    ca = None if force else _load(directory, CA_CERT, CA_KEY)
    issued_ca = ca is None or needs_renewal(ca.cert, renew_before, now)
    if issued_ca:
        ca = issue_ca(f"gangweb-webhook-ca ({namespace})", ca_days, now)
    serving = None if (force or issued_ca) else _load(directory, TLS_CERT, TLS_KEY)
    issued_serving = (
        serving is None
        or needs_renewal(serving.cert, renew_before, now)
        or sorted(san_names(serving.cert)) != sorted(names)
        or serving.cert.issuer != ca.cert.subject
    )
    if issued_serving:
        serving = issue_serving(ca, names, days, now)
    # Key before certificate: a reloading server that sees the new certificate also finds its key.
    if issued_ca:
        _write_atomically(directory / CA_KEY, ca.key_pem(), 0o600)
        _write_atomically(directory / CA_CERT, ca.cert_pem(), 0o644)
    if issued_serving:
        _write_atomically(directory / TLS_KEY, serving.key_pem(), 0o600)
        _write_atomically(directory / TLS_CERT, serving.cert_pem(), 0o644)
    return CertificateSet(ca=ca, serving=serving, issued_ca=issued_ca, issued_serving=issued_serving)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """Issued by ``ca`` itself: a renewed CA keeps its subject but not its key."""
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def common_name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def ensure_client_certificate(
    directory: Path,
    ca: KeyPair,
    name: str,
    *,
    days: int = 365,
    renew_before: dt.timedelta = dt.timedelta(days=30),
    force: bool = False,
    now: dt.datetime | None = None,
) -> tuple[KeyPair, bool]:
    """Make sure ``directory`` holds kube-apiserver's client certificate for ``name``, signed by ``ca``
    (reissued when missing, expiring, of another name or another CA); returns it and whether it was issued."""
    if not is_dns1123_subdomain(name):
        raise CertificateError(f"invalid client name {name!r}: use a DNS name such as kube-apiserver")
    now = now or _now()
    current = None if force else _load(directory, CLIENT_CERT, CLIENT_KEY)
    if (
        current is not None
        and not needs_renewal(current.cert, renew_before, now)
        and common_name(current.cert) == name
        and _signed_by(current.cert, ca.cert)
    ):
        return current, False
    issued = issue_client(ca, name, days, now)
    try:
        _write_atomically(directory / CLIENT_KEY, issued.key_pem(), 0o600)
        _write_atomically(directory / CLIENT_CERT, issued.cert_pem(), 0o644)
    except OSError as error:
        raise CertificateError(
            f"cannot write the client certificate to {directory}: {error.strerror or error}"
        ) from error
    return issued, True


def secret_manifest(certs: CertificateSet, name: str, namespace: str) -> dict:
    """A ``kubernetes.io/tls`` Secret holding the serving pair and the CA certificate (not its key)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "gangweb", "app.kubernetes.io/component": "webhook"},
        },
        "data": {
            "tls.crt": b64(certs.serving.cert_pem()),
            "tls.key": b64(certs.serving.key_pem()),
            "ca.crt": b64(certs.ca.cert_pem()),
        },
    }
