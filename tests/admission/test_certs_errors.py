"""`webhook certs` and `webhook config` on bad input: one clear line and exit status 2, never a traceback;
corrupt certificate files are replaced, not fatal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from admission import certs

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "webhook", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GANGWEB_NAMESPACE": "gangweb-system"},
    )


def assert_usage_error(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


def test_a_file_given_as_the_directory(tmp_path):
    in_the_way = tmp_path / "passwd"
    in_the_way.write_text("root:x:0:0\n")
    assert_usage_error(manage("certs", "--dir", str(in_the_way)), str(in_the_way), "not a directory")
    assert_usage_error(manage("certs", "--dir", str(in_the_way / "sub")), "Not a directory")
    assert in_the_way.read_text() == "root:x:0:0\n"


def test_a_directory_where_a_certificate_file_belongs(tmp_path):
    (tmp_path / certs.TLS_KEY).mkdir()
    assert_usage_error(manage("certs", "--dir", str(tmp_path)), "tls.key is a directory")


def test_a_directory_that_cannot_be_written(tmp_path):
    if os.geteuid() == 0:
        target = Path("/proc/self")  # root may write anywhere else; procfs refuses new files even to root
    else:
        target = tmp_path / "locked"
        target.mkdir(mode=0o500)
    assert_usage_error(manage("certs", "--dir", str(target)), f"cannot write the certificates to {target}")


@pytest.mark.parametrize(
    ("option", "value", "phrase"),
    [
        ("--service", "Bad_Name!", "invalid service name 'Bad_Name!'"),
        ("--service", "9lives", "invalid service name"),  # Service names start with a letter (DNS-1035)
        ("--service", "a" * 64, "invalid service name"),
        ("--namespace", "Team.A", "invalid namespace 'Team.A'"),
        ("--namespace", "ns-", "invalid namespace"),
    ],
)
def test_names_that_cannot_be_kubernetes_names(tmp_path, option, value, phrase):
    assert_usage_error(manage("certs", "--dir", str(tmp_path), f"{option}={value}"), phrase)
    assert not list(tmp_path.iterdir())  # nothing written
    assert_usage_error(manage("config", "--ca-file", str(tmp_path / "ca.crt"), f"{option}={value}"), phrase)


def test_lifetimes_must_be_positive(tmp_path):
    assert_usage_error(manage("certs", "--dir", str(tmp_path), "--days", "0"), "--days must be at least 1")


def test_valid_names_still_work(tmp_path):
    result = manage("certs", "--dir", str(tmp_path), "--service", "hook-1", "--namespace", "9-ops")
    assert result.returncode == 0, result.stderr
    assert "hook-1.9-ops.svc" in result.stderr


@pytest.mark.parametrize("corrupt", [certs.CA_CERT, certs.CA_KEY, certs.TLS_CERT, certs.TLS_KEY])
def test_corrupt_files_are_replaced(tmp_path, corrupt):
    first = certs.ensure_certificates(tmp_path, "svc", "ns")
    (tmp_path / corrupt).write_bytes(
        b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n"
    )
    again = certs.ensure_certificates(tmp_path, "svc", "ns")
    assert again.issued_serving
    assert again.issued_ca == (corrupt in (certs.CA_CERT, certs.CA_KEY))
    # What is on disk now is a consistent, loadable set again.
    ca = x509.load_pem_x509_certificate((tmp_path / certs.CA_CERT).read_bytes())
    serving = x509.load_pem_x509_certificate((tmp_path / certs.TLS_CERT).read_bytes())
    serving.verify_directly_issued_by(ca)
    assert certs.ensure_certificates(tmp_path, "svc", "ns").issued_serving is False
    assert first.ca.cert.serial_number != ca.serial_number or corrupt not in (certs.CA_CERT, certs.CA_KEY)


def test_an_empty_key_file_through_the_command(tmp_path):
    assert manage("certs", "--dir", str(tmp_path)).returncode == 0
    (tmp_path / certs.TLS_KEY).write_bytes(b"")
    result = manage("certs", "--dir", str(tmp_path))
    assert result.returncode == 0 and "serving certificate issued" in result.stderr, result.stderr
