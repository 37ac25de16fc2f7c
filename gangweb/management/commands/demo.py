"""``python manage.py demo``: migrate, ensure an admin, serve gangweb with the live simulated cluster.

One process: uvicorn runs ``gangweb.asgi`` in this process's event loop, next to the simulation
ticker, so the in-memory channel layer of the demo reaches every browser. Without a Celery broker
(the demo) the beat schedule runs here too, each task inline, so gangweb detects waiting gangs,
plans and evicts in the simulated cluster while you watch. Ctrl-C or SIGTERM stops the server
gracefully and the command exits 0.

The dashboard is readable without a login in the demo (``settings.DEMO``); the admin and the REST
API need the ``admin`` user printed at start-up. That user is created (and reset from
``GANGWEB_ADMIN_PASSWORD``) only in the demo's own SQLite file under ``var/``: on a database that
``DATABASE_URL`` names, the command creates and resets no user, and the login is one of your own.
A generated password is kept in ``var/demo-admin-password``, a file that is 0600 from its creation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
from pathlib import Path

import uvicorn
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError
from django.utils.module_loading import autodiscover_modules

from gangweb.dashboard import live
from scheduler.argtypes import port
from scheduler.preemption.runtime import get_cluster
from scheduler.simulation import SimulatedCluster, scene

ADMIN_USERNAME = "admin"
logger = logging.getLogger(__name__)


class _QuietSignalServer(uvicorn.Server):
    """uvicorn, minus re-raising the stop signal after shutdown, so a stopped demo exits 0."""

    @contextlib.contextmanager
    def capture_signals(self):
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop, sig)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    def _stop(self, sig: int) -> None:
        # A second Ctrl-C skips waiting for open websockets to close.
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True


def _env_port() -> int:
    raw = os.environ.get("GANGWEB_PORT", "8000")
    try:
        return port(raw)
    except argparse.ArgumentTypeError as exc:
        raise CommandError(f"GANGWEB_PORT {exc}", returncode=2) from None


def _is_demo_database() -> bool:
    """The embedded SQLite file of the demo (no DATABASE_URL), the only database whose admin the demo manages."""
    db = settings.DATABASES["default"]
    return (
        not settings.DATABASE_URL
        and db["ENGINE"] == "django.db.backends.sqlite3"
        and Path(db["NAME"]) == Path(settings.VAR_DIR) / "gangweb.sqlite3"
    )


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file that is 0600 from its creation on (an old copy is replaced, never reused)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


class Command(BaseCommand):
    help = "Run the gangweb demo: migrate, ensure an admin user, serve the live dashboard on the simulated cluster."

    def add_arguments(self, parser):
        parser.add_argument(
            "--host",
            default=os.environ.get("GANGWEB_HOST", "127.0.0.1"),
            help="address to listen on (GANGWEB_HOST, default 127.0.0.1)",
        )
        parser.add_argument(
            "--port", type=port, default=None, help="port to listen on (GANGWEB_PORT, default 8000)"
        )

    def handle(self, *args, host: str, port: int | None, **options):
        port = _env_port() if port is None else port
        try:
            get_cluster()
        except Exception as exc:  # a bad GANGWEB_SIM_* value or an unreachable cluster: say so, once
            raise CommandError(f"cannot set up the {settings.GANGWEB_CLUSTER} cluster: {exc}") from None
        listener = self._listen(host, port)
        try:
            call_command("migrate", interactive=False, verbosity=0)
            login = self._ensure_admin()
            self._new_world()
        except DatabaseError as exc:
            listener.close()
            detail = " ".join(str(exc).split())
            raise CommandError(f"cannot prepare the database ({detail}); check DATABASE_URL") from None

        base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        config = uvicorn.Config(
            "gangweb.asgi:application",
            lifespan="off",
            log_config=None,
            access_log=False,
            # The client is the connection's address; gangweb, not the server, reads X-Forwarded-For, and
            # only from GANGWEB_TRUSTED_PROXIES (gangweb/access/throttle.py).
            proxy_headers=False,
            timeout_graceful_shutdown=3,
        )
        server = _QuietSignalServer(config)
        asyncio.run(self._serve(server, listener, base, login))
        self.stdout.write("gangweb demo stopped.")

    def _listen(self, host: str, port: int) -> socket.socket:
        """Bind before anything else, so a busy port is a clear one-line error, not a server traceback."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise CommandError(
                f"cannot listen on {host}:{port} ({exc.strerror}); try another port: "
                f"GANGWEB_PORT={port + 1} make demo (or manage.py demo --port {port + 1})"
            ) from None
        sock.listen(128)
        sock.set_inheritable(True)
        return sock

    def _new_world(self) -> None:
        """A demo start is a new simulated world with the old one's names: on the demo's own database the
        old world's ledger, samples and kept decisions go, so no figure, card or chart mixes the two
        (docs/dashboard.md "Demo scene"). A database DATABASE_URL names is a deployment's: kept, and said."""
        if not _is_demo_database():
            self.stdout.write(
                "the ledger and history of this database are kept (not the demo's own database)"
            )
            return
        from gangweb.api.v1 import store
        from gangweb.dashboard.models import GpuSample, IdleSample
        from scheduler.preemption.models import BrokenGang, LedgerEntry, PreemptionRequest

        # The ledger is append-only for the pipeline; a world that is gone takes its whole ledger with it.
        for model in (PreemptionRequest, LedgerEntry, BrokenGang, GpuSample, IdleSample):
            model.objects.all().delete()
        store.DECISIONS.clear()
        store.USAGE.clear()

    def _ensure_admin(self) -> str:
        """Create (or reset from GANGWEB_ADMIN_PASSWORD) the demo's admin; what to print as the login.

        Only on the demo's own database (the embedded SQLite under GANGWEB_VAR_DIR): on a database
        DATABASE_URL names, users are that deployment's, and the demo neither creates nor resets one.
        """
        if not _is_demo_database():
            return (
                "your own user (this database is not the demo's: the demo creates and resets no user in it)"
            )
        user_model = get_user_model()
        wanted = os.environ.get("GANGWEB_ADMIN_PASSWORD", "")
        password_file = Path(settings.VAR_DIR) / "demo-admin-password"
        user = user_model.objects.filter(username=ADMIN_USERNAME).first()
        if user is None:
            password = wanted or secrets.token_urlsafe(12)
            if not wanted:
                _write_private(password_file, password + "\n")
            user_model.objects.create_superuser(ADMIN_USERNAME, "admin@example.com", password)
            return f"{ADMIN_USERNAME} / {password}"
        if wanted:
            if not user.check_password(wanted):
                user.set_password(wanted)
                user.save(update_fields=["password"])
            return f"{ADMIN_USERNAME} / {wanted}"
        if password_file.exists() and user.check_password(password_file.read_text().strip()):
            return f"{ADMIN_USERNAME} / {password_file.read_text().strip()}"
        return f"{ADMIN_USERNAME} / (unchanged; set GANGWEB_ADMIN_PASSWORD to reset it)"

    async def _serve(self, server: uvicorn.Server, listener: socket.socket, base: str, login: str) -> None:
        ticker = live.ensure_ticker()
        beat = asyncio.create_task(self._beat_in_process()) if settings.CELERY_TASK_ALWAYS_EAGER else None
        announcer = asyncio.create_task(self._announce_when_up(server, base, login, ticker is not None))
        scene = asyncio.create_task(self._scene_when_up(server)) if ticker is not None else None
        try:
            await server.serve(sockets=[listener])
        finally:
            announcer.cancel()
            if scene is not None:
                scene.cancel()
            if beat is not None:
                beat.cancel()
            await live.stop_ticker()
            listener.close()

    async def _beat_in_process(self) -> None:
        """Celery beat for a process without a broker: each due task runs inline (``Task.apply``)."""
        from gangweb.celery import app

        autodiscover_modules("tasks")
        loop = asyncio.get_running_loop()
        entries = []
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
            if entry["task"] in app.tasks and isinstance(entry["schedule"], (int, float)):
                entries.append((name, app.tasks[entry["task"]], float(entry["schedule"])))
        due = {name: loop.time() + period for name, _, period in entries}
        while True:
            await asyncio.sleep(0.5)
            for name, task, period in entries:
                if loop.time() < due[name]:
                    continue
                due[name] = loop.time() + period
                try:
                    # Django's sync thread, like the views: SQLite sees one writer at a time.
                    await sync_to_async(task.apply, thread_sensitive=True)()
                except Exception:
                    logger.exception("in-process beat task failed", extra={"task": name})

    async def _scene_when_up(self, server: uvicorn.Server) -> None:
        """The scripted scene (``scheduler/simulation/scene.py``) at a known time, so the first minute shows a
        whole preemption: nothing is printed (the banner stays the terminal's last lines); the map and
        the activity feed show it."""
        delay = settings.GANGWEB_DEMO_SCENE_SECONDS
        if delay <= 0:
            return
        while not server.started:
            await asyncio.sleep(0.05)
        await asyncio.sleep(delay)
        cluster = get_cluster()
        if isinstance(cluster, SimulatedCluster):
            gang = await sync_to_async(scene.stage, thread_sensitive=True)(cluster)
            logger.debug("demo scene staged: %s", gang and gang.key)

    async def _announce_when_up(self, server: uvicorn.Server, base: str, login: str, ticking: bool) -> None:
        while not server.started:
            await asyncio.sleep(0.05)
        cluster = (
            f"simulated, {settings.GANGWEB_SIM_NODES} nodes, seed {settings.GANGWEB_SIM_SEED}, "
            f"tick every {settings.GANGWEB_SIM_TICK_SECONDS:g}s"
            if ticking
            else settings.GANGWEB_CLUSTER
        )
        lines = [
            "",
            f"gangweb demo is running: {base}/",
            f"  login:   {login}   (admin: {base}/admin/)",
            f"  cluster: {cluster}",
            "  gangweb: "
            + (
                f"detects waiting gangs every {settings.GANGWEB_DETECT_INTERVAL_SECONDS}s in this process"
                if settings.CELERY_TASK_ALWAYS_EAGER
                else "run Celery worker and beat (REDIS_URL is set)"
            ),
            "  stop:    Ctrl-C",
            *(
                []
                if base.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]"))
                else ["  note:    add this machine's name to ALLOWED_HOSTS to reach it from elsewhere"]
            ),
            "",
        ]
        self.stdout.write("\n".join(lines))
        self.stdout.flush()
