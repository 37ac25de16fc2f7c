"""The access tests' client side of a real server: ``manage.py`` runs and a browser that signs in."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
import websockets

from tests.conftest import ROOT


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


class Browser:
    """A browser: its cookies, and the CSRF token its last page carried. ``source`` is the loopback
    address it connects from (127.0.0.0/8 all reach the server), so tests have clients on different
    addresses."""

    def __init__(self, address: str, source: str = "127.0.0.1") -> None:
        self.address = address
        self.http = httpx.Client(
            base_url=f"http://{address}", timeout=60, transport=httpx.HTTPTransport(local_address=source)
        )

    def csrf(self, path: str) -> str:
        page = self.http.get(path)
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)

    def try_sign_in(self, username: str, password: str) -> httpx.Response:
        token = self.csrf("/login/")
        return self.http.post(
            "/login/",
            data={"csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/"},
        )

    def sign_in(self, username: str, password: str) -> None:
        answer = self.try_sign_in(username, password)
        assert answer.status_code == 302 and answer.headers["location"] == "/", answer.text[-1500:]

    def sign_out(self) -> None:
        answer = self.http.post("/logout/", data={"csrfmiddlewaretoken": self.csrf("/")})
        assert answer.status_code == 302 and answer.headers["location"] == "/login/"

    def cookie(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.http.cookies.items())

    def socket(self):
        return websockets.connect(
            f"ws://{self.address}/ws/live/",
            origin=f"http://{self.address}",
            additional_headers={"Cookie": self.cookie()},
        )
