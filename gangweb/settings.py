"""gangweb settings: environment variables only, with embedded defaults.

With nothing set, gangweb runs the demo: SQLite, an in-memory channel layer, Celery tasks run eagerly
in-process, and the simulated cluster. ``DATABASE_URL`` switches to PostgreSQL, ``REDIS_URL`` to Redis
for Celery and channels-redis, ``KUBECONFIG`` (or in-cluster service account) to a real cluster.
The full list is in README.md ("Configuration").
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from gangweb.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_namespace_map,
    env_namespace_numbers,
    env_networks,
    env_optional_float,
)
from gangweb.offline import offline_command
from scheduler.queues.managers import parse_allowed
from scheduler.simulation.queues import SYSTEMS as SIM_QUEUE_SYSTEMS

BASE_DIR = Path(__file__).resolve().parent.parent
# The package's own files (templates/, static/): inside the package, so an installed wheel has them too.
PACKAGE_DIR = Path(__file__).resolve().parent
# A checkout keeps its state beside manage.py; an installed package in the user's data directory.
_DEFAULT_VAR_DIR = (
    BASE_DIR / "var"
    if (BASE_DIR / "manage.py").exists()
    else Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "gangweb"
)
VAR_DIR = Path(os.environ.get("GANGWEB_VAR_DIR", _DEFAULT_VAR_DIR))


# pytest imports settings before any test code can set variables; tests still get a key (their own).
RUNNING_TESTS = "pytest" in sys.modules
DEBUG = env_bool("DEBUG", False)
KUBECONFIG = os.environ.get("KUBECONFIG", "")
IN_CLUSTER = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
# `manage.py gang plan|replay`, `bench engine` (gangweb/offline.py): they serve nothing, so the guards below
# that protect a running service do not stop them, and they get no database.
OFFLINE = offline_command(sys.argv)


def production_parts() -> list[str]:
    """What points this process at something real (a database, Redis, a cluster), as the variables say it."""
    parts = [name for name in ("DATABASE_URL", "REDIS_URL", "KUBECONFIG") if os.environ.get(name)]
    if IN_CLUSTER:
        parts.append("KUBERNETES_SERVICE_HOST")  # running in a pod: the in-cluster service account
    if os.environ.get("GANGWEB_CLUSTER") == "kube":
        parts.append("GANGWEB_CLUSTER=kube")
    return parts


# The demo is what runs on embedded defaults: nothing points at production parts. It opens the
# dashboard and the API's reads to anonymous users and signs with a public key, so GANGWEB_DEMO=1
# cannot switch it on beside a production part (GANGWEB_DEMO=0 switches it off anywhere).
PRODUCTION_PARTS = production_parts()
DEMO = env_bool("GANGWEB_DEMO", not PRODUCTION_PARTS)
if DEMO and PRODUCTION_PARTS and not OFFLINE:
    raise ImproperlyConfigured(
        f"GANGWEB_DEMO=1 cannot run beside {', '.join(PRODUCTION_PARTS)}: the demo lets anyone read the "
        "dashboard and the API without a login. Unset GANGWEB_DEMO (and set SECRET_KEY), or unset those to "
        "run the embedded demo"
    )

# Public (it is in this file): only ever the key of the embedded demo.
DEMO_SECRET_KEY = "gangweb-demo-insecure-key-do-not-use-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if DEMO:
        SECRET_KEY = DEMO_SECRET_KEY
    elif RUNNING_TESTS or OFFLINE:
        # A test process beside real services, or an offline command: a key of its own, never the public one.
        SECRET_KEY = secrets.token_urlsafe(50)
    else:
        why = f"{', '.join(PRODUCTION_PARTS)} set" if PRODUCTION_PARTS else "not the demo"
        raise ImproperlyConfigured(
            f"SECRET_KEY is required ({why}; the built-in key is only for the embedded demo): set SECRET_KEY "
            "to a long random value, e.g. the output of python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
elif SECRET_KEY == DEMO_SECRET_KEY and not DEMO:
    raise ImproperlyConfigured(
        "SECRET_KEY is the demo's public built-in key: set a long random value of your own"
    )

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if (DEMO or DEBUG or RUNNING_TESTS) else []
)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "gangweb",
    "gangweb.dashboard",
    "gangweb.access",
    "gangweb.notify",
    "scheduler.preemption",
    "admission",
]

MIDDLEWARE = [
    "gangweb.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "gangweb.security.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gangweb.urls"
WSGI_APPLICATION = "gangweb.wsgi.application"
ASGI_APPLICATION = "gangweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Before the apps' own, so gangweb/templates/drf_spectacular/ overrides drf-spectacular's pages.
        "DIRS": [PACKAGE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if OFFLINE:
    DATABASES: dict = {}  # Django's dummy backend: a query would fail loudly, and nothing is created
elif DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # /readyz must answer quickly when the database is unreachable.
        DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int(
            "DATABASE_CONNECT_TIMEOUT", 2
        )
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "gangweb.sqlite3",
            # The demo's process writes from its tasks while `manage.py access grant` and others write
            # beside it: IMMEDIATE takes the write lock at BEGIN, so a busy writer waits out the timeout
            # instead of failing at once with "database is locked" (a read upgraded to a write mid-way),
            # and WAL lets the pages read while a task writes.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Celery broker + channel layer ---------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default read timeout (5 s) equals channels-redis's blocking pop (5 s): an idle
            # socket's receive raised TimeoutError under load and the consumer died (bench live: 2 of 20
            # sockets in 10 s). Reads wait longer than the pop.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
                "capacity": 1000,
                "expiry": 30,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The in-memory broker names its host, or kombu warns "No hostname was supplied" (after the demo's banner).
CELERY_BROKER_URL = REDIS_URL or "memory://localhost//"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
# Without a broker the demo runs tasks in-process; with Redis they go to real workers.
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
# One task at a time per worker process: plans are CPU-bound and executions hold node locks.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Longest task (an execution waiting on evictions) is bounded by the hard time limit below; the
# visibility timeout must exceed it, or Redis would hand an unacked task to a second worker.
CELERY_TASK_TIME_LIMIT = env_int("GANGWEB_TASK_TIME_LIMIT", 300)
# The soft limit stops an execution between API calls (docs/pipeline.md, "Time limits"); the 30 s before the
# hard limit let the calls in flight finish (each at most GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS + 5).
CELERY_TASK_SOFT_TIME_LIMIT = env_int("GANGWEB_TASK_SOFT_TIME_LIMIT", CELERY_TASK_TIME_LIMIT - 30)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT * 4}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_TRACK_STARTED = True

# --- Cluster --------------------------------------------------------------------------------
# "simulated" (the demo default) or "kube" (KUBECONFIG or in-cluster service account).
GANGWEB_CLUSTER = env_choice(
    "GANGWEB_CLUSTER", ("simulated", "kube"), "kube" if (KUBECONFIG or IN_CLUSTER) else None
)
# Where the dashboard's replay page (/replay/) finds the latest `gang replay --plots DIR` run.
GANGWEB_REPLAY_DIR = Path(os.environ.get("GANGWEB_REPLAY_DIR", VAR_DIR / "replay"))
GANGWEB_SIM_NODES = env_int("GANGWEB_SIM_NODES", 64)
# The demo's scripted scene (scheduler/simulation/scene.py): this many seconds after the server is up, a
# top-tier gang arrives that only fits once gangweb evicts lower-priority gangs; 0 = no scene.
GANGWEB_DEMO_SCENE_SECONDS = env_float("GANGWEB_DEMO_SCENE_SECONDS", 20.0)
GANGWEB_SIM_SEED = env_int("GANGWEB_SIM_SEED", 7)
# GPUs of the simulated cluster: the nvidia.com/gpu extended resource, or DRA devices (ResourceSlices, claims).
GANGWEB_SIM_DEVICES = env_choice("GANGWEB_SIM_DEVICES", ("extended", "dra"))
# The queue manager the simulated cluster's team namespaces run under (scheduler/simulation/queues.py).
GANGWEB_SIM_QUEUES = env_choice("GANGWEB_SIM_QUEUES", SIM_QUEUE_SYSTEMS)
GANGWEB_SIM_TICK_SECONDS = env_float("GANGWEB_SIM_TICK_SECONDS", 2.0)
# Every this many ticks a running gang of the simulation loses a member for a while (a broken gang to see;
# docs/idle.md); 0: never.
GANGWEB_SIM_LOSS_TICKS = env_int("GANGWEB_SIM_LOSS_TICKS", 60)

# --- Dashboard (docs/dashboard.md) ---------------------------------------------------------------
# How often the GPU map of a real cluster is refreshed (the simulation refreshes it every tick).
GANGWEB_MAP_REFRESH_SECONDS = env_int("GANGWEB_MAP_REFRESH_SECONDS", 5)
# The overview chart's history: one sample at most this often, this many kept (2 days at a minute).
GANGWEB_HISTORY_SECONDS = env_int("GANGWEB_HISTORY_SECONDS", 10 if DEMO else 60)
GANGWEB_HISTORY_KEEP = env_int("GANGWEB_HISTORY_KEEP", 2880)

# --- Modes (docs/design.md "Living beside kube-scheduler") ---------------------------------------
GANGWEB_MODES = ("enforce", "observe", "approve")
GANGWEB_MODE = env_choice("GANGWEB_MODE", GANGWEB_MODES)


GANGWEB_NAMESPACE_MODES = env_namespace_map("GANGWEB_NAMESPACE_MODES", GANGWEB_MODES)
# approve mode: a plan not approved by an operator within this time expires (docs/design.md, "Modes").
GANGWEB_APPROVAL_TIMEOUT_SECONDS = env_int("GANGWEB_APPROVAL_TIMEOUT_SECONDS", 3600)
# Preempt with notice (docs/design.md "Notice"): victims are told this many seconds before they are evicted,
# and evicted sooner once every victim unit has saved a checkpoint; per victim namespace as "team-a=300";
# 0 = no notice (evicted at once); the demo gives 10 s, which its simulated workloads that save on notice
# answer. The notice is looked at every TICK seconds.
GANGWEB_PREEMPTION_NOTICE_SECONDS = env_int("GANGWEB_PREEMPTION_NOTICE_SECONDS", 10 if DEMO else 0)
GANGWEB_NAMESPACE_PREEMPTION_NOTICE_SECONDS = env_namespace_numbers(
    "GANGWEB_NAMESPACE_PREEMPTION_NOTICE_SECONDS"
)
GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS = env_float("GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS", 2.0)
if GANGWEB_PREEMPTION_NOTICE_SECONDS < 0:
    raise ImproperlyConfigured("GANGWEB_PREEMPTION_NOTICE_SECONDS must be 0 or more")
if GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS <= 0:
    raise ImproperlyConfigured("GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS must be more than 0")
GANGWEB_NAMESPACE = os.environ.get("GANGWEB_NAMESPACE", "gangweb-system")
# Admission webhook (docs/admission.md): disruption mode of the PodGroups it builds (default, and per
# namespace as "team-a=single,team-b=all"), extra namespaces it never touches.
GANGWEB_DISRUPTION_MODE = env_choice("GANGWEB_DISRUPTION_MODE", ("all", "single"))
GANGWEB_NAMESPACE_DISRUPTION_MODES = env_namespace_map(
    "GANGWEB_NAMESPACE_DISRUPTION_MODES", ("all", "single")
)
GANGWEB_ADMISSION_SKIP_NAMESPACES = env_list("GANGWEB_ADMISSION_SKIP_NAMESPACES", [])
GANGWEB_PENDING_GRACE_SECONDS = env_int("GANGWEB_PENDING_GRACE_SECONDS", 30)
# Preemption pipeline (docs/pipeline.md): node-lock expiry (a killed worker's locks free up after it),
# pause between two requests for one gang, cluster size from which planning fans out over workers.
# A lock must outlast any API call begun under it: TTL x 2/3 > connect + read timeout (45 x 2/3 > 5 + 15).
GANGWEB_LOCK_TTL_SECONDS = env_int("GANGWEB_LOCK_TTL_SECONDS", 45)
# Read timeout of every non-watch Kubernetes call (connect: at most 5 s of it).
GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS = env_int("GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS", 15)
# Disruption budgets in enforce mode (docs/pipeline.md, "Disruption budgets"): "respect" never executes a
# plan that a PDB forbids; "delete" removes victims like kube-scheduler does (DELETE, budgets best effort).
GANGWEB_PDB_POLICY = env_choice("GANGWEB_PDB_POLICY", ("respect", "delete"))
GANGWEB_REQUEST_COOLDOWN_SECONDS = env_int("GANGWEB_REQUEST_COOLDOWN_SECONDS", 60)
# 0 = off: measured slower than one task at 5,000 and 20,000 nodes (docs/pipeline.md, "Planning").
# With GANGWEB_CLUSTER=kube, each process that reads the cluster keeps one watch cache per kind (listed once,
# then watched; docs/kube.md "Watch cache"). 0: every read lists afresh, as before.
GANGWEB_WATCH = env_bool("GANGWEB_WATCH", True)
GANGWEB_DETECT_INTERVAL_SECONDS = env_int("GANGWEB_DETECT_INTERVAL_SECONDS", 10)
# Pods wait (PreEnqueue) until the PodGroup they name exists: ensure missing ones often (admission/tasks.py,
# docs/admission.md).
GANGWEB_ENSURE_INTERVAL_SECONDS = env_int("GANGWEB_ENSURE_INTERVAL_SECONDS", 5)
# Queue managers whose units gangweb's plans may take as victims (docs/queues.md "Never fight a queue
# manager"): none by default; volcano and yunikorn may be allowed, kueue and kai never.
try:
    GANGWEB_QUEUE_VICTIMS = parse_allowed(env_list("GANGWEB_QUEUE_VICTIMS", []))
except ValueError as exc:
    raise ImproperlyConfigured(f"GANGWEB_QUEUE_VICTIMS: {exc}") from None
# Room gangweb freed stays reserved for its gang this long, while kube-scheduler binds it.
GANGWEB_RESERVATION_SECONDS = env_int("GANGWEB_RESERVATION_SECONDS", 120)
# Lost work (docs/engine.md "Lost work", docs/pipeline.md "The lost-work budget"): a workload that reports no
# checkpoint is assumed to save every this many seconds of its run (0: never), per namespace too.
GANGWEB_CHECKPOINT_INTERVAL_SECONDS = env_optional_float("GANGWEB_CHECKPOINT_INTERVAL_SECONDS") or 0.0
GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS = env_namespace_numbers("GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS")
# GPU-hours of work a namespace's victims may lose to preemption per rolling hour (unset: no cap).
GANGWEB_LOST_WORK_BUDGET_GPU_HOURS = env_optional_float("GANGWEB_LOST_WORK_BUDGET_GPU_HOURS")
GANGWEB_NAMESPACE_LOST_WORK_BUDGETS = env_namespace_numbers("GANGWEB_NAMESPACE_LOST_WORK_BUDGETS")
# ... and a queue's (SYSTEM/NAME, as docs/queues.md names queues), over its namespaces' (no default).
GANGWEB_QUEUE_LOST_WORK_BUDGETS = env_namespace_numbers("GANGWEB_QUEUE_LOST_WORK_BUDGETS", "volcano/q1=2")
# Celery workers serve their own /metrics here when set (see docs/pipeline.md, "Metrics").
GANGWEB_WORKER_METRICS_PORT = env_int("GANGWEB_WORKER_METRICS_PORT", 0)
# The web process serves its /metrics here when set, never on the dashboard's port (gangweb/metrics.py); 0 = off.
GANGWEB_WEB_METRICS_PORT = env_int("GANGWEB_WEB_METRICS_PORT", 0)
# Beat runs as several copies and only the holder of a Redis lock sends (gangweb/beat.py): a holder lost with
# its node is replaced within this many seconds.
GANGWEB_BEAT_LOCK_SECONDS = env_int("GANGWEB_BEAT_LOCK_SECONDS", 10)
CELERY_BEAT_SCHEDULER = "gangweb.beat:LeaderScheduler"
CELERY_BEAT_SCHEDULE = {
    "detect-unschedulable-gangs": {
        "task": "scheduler.detect_unschedulable_gangs",
        "schedule": float(GANGWEB_DETECT_INTERVAL_SECONDS),
        "options": {"expires": float(GANGWEB_DETECT_INTERVAL_SECONDS)},
    },
    "recover-requests": {
        "task": "scheduler.recover_requests",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    "expire-approvals": {
        "task": "scheduler.expire_approvals",
        "schedule": float(min(30, max(1, GANGWEB_APPROVAL_TIMEOUT_SECONDS))),
        "options": {"expires": 30.0},
    },
    "tick-notices": {
        "task": "scheduler.tick_notices",
        "schedule": GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS,
        "options": {"expires": GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS},
    },
    "ensure-podgroups": {
        "task": "scheduler.ensure_podgroups",
        "schedule": float(GANGWEB_ENSURE_INTERVAL_SECONDS),
        "options": {"expires": float(GANGWEB_ENSURE_INTERVAL_SECONDS)},
    },
}

# --- HTTP ----------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
# gangweb/static/ is found as the gangweb app's static directory (no STATICFILES_DIRS).
STATIC_ROOT = VAR_DIR / "staticfiles"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
# --- Access (docs/design.md "Access") ------------------------------------------------------------
# TokenReview and SubjectAccessReview answers (and the RoleBinding list) are reused for this long.
GANGWEB_K8S_REVIEW_TTL_SECONDS = env_int("GANGWEB_K8S_REVIEW_TTL_SECONDS", 30)
# A "no" (a token TokenReview did not authenticate, a SubjectAccessReview not allowed) for this long, at most
# the TTL above: a new token or grant is seen sooner. Shared by the web replicas in Redis when REDIS_URL is set.
GANGWEB_K8S_REVIEW_NEGATIVE_TTL_SECONDS = env_int("GANGWEB_K8S_REVIEW_NEGATIVE_TTL_SECONDS", 10)
# Guessing (docs/design.md "Access: guessing"): wrong passwords per account and per source address, and
# TokenReviews of tokens that did not authenticate per source address, are free up to these counts; then
# each further one makes the next attempt wait twice as long (1 s, 2 s, 4 s, ... at most the max wait),
# and a count is forgotten FORGET seconds after its last attempt. Redis holds the counts when REDIS_URL is set.
GANGWEB_PASSWORD_ACCOUNT_FAILURES = env_int("GANGWEB_PASSWORD_ACCOUNT_FAILURES", 5)
GANGWEB_PASSWORD_SOURCE_FAILURES = env_int("GANGWEB_PASSWORD_SOURCE_FAILURES", 20)
GANGWEB_K8S_REVIEW_FAILURES = env_int("GANGWEB_K8S_REVIEW_FAILURES", 20)
# Review opaque bearer tokens too (static token files, webhook authenticators): off, because any string
# of the right characters then costs a TokenReview (still charged to its source, above).
GANGWEB_K8S_OPAQUE_TOKENS = env_bool("GANGWEB_K8S_OPAQUE_TOKENS", False)
GANGWEB_BACKOFF_MAX_SECONDS = env_int("GANGWEB_BACKOFF_MAX_SECONDS", 300)
GANGWEB_BACKOFF_FORGET_SECONDS = env_int("GANGWEB_BACKOFF_FORGET_SECONDS", 3600)
# Proxies in front of gangweb (addresses or CIDRs): from them, the client is the nearest untrusted address
# in X-Forwarded-For; from anyone else, the connection's own address (REMOTE_ADDR).
GANGWEB_TRUSTED_PROXIES = env_networks("GANGWEB_TRUSTED_PROXIES")
# Passwords are checked by ModelBackend behind the counts above (gangweb/access/passwords.py).
AUTHENTICATION_BACKENDS = ["gangweb.access.passwords.PasswordBackend"]
# An open dashboard websocket re-checks its session and scope this often (a backstop: sign-out and
# role changes close it at once).
GANGWEB_SESSION_RECHECK_SECONDS = env_int("GANGWEB_SESSION_RECHECK_SECONDS", 30)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not (DEBUG or DEMO or RUNNING_TESTS))
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Strict-Transport-Security (gangweb/security.py): SecurityMiddleware sends it only on requests that reached
# gangweb over TLS, which (no proxy header is trusted) means the ASGI server itself terminated it (uvicorn with --ssl-keyfile). 0: never.
SECURE_HSTS_SECONDS = env_int("GANGWEB_HSTS_SECONDS", 31_536_000)
# AdmissionReviews carry up to two 3 MiB objects (the apiserver's own limit); see admission/.
DATA_UPLOAD_MAX_MEMORY_SIZE = 7 * 1024 * 1024

REST_FRAMEWORK = {
    # gangweb tokens, Kubernetes tokens, Basic, session: gangweb/access/authentication.py.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "gangweb.access.authentication.GangwebTokenAuthentication",
        "gangweb.access.authentication.KubernetesTokenAuthentication",
        "gangweb.access.authentication.BasicAuthentication",
        "gangweb.access.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's two, the HTML one with the Content-Security-Policy its templates need (gangweb/security.py).
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "gangweb.api.v1.renderers.BrowsableAPIRenderer",
    ],
    # The API v1 (gangweb/api/v1/, docs/design.md "API v1"): pages, one error shape, the schema, throttles.
    "DEFAULT_PAGINATION_CLASS": "gangweb.api.v1.params.Page",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "gangweb.api.v1.problems.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # POST /api/v1/simulate costs an engine run per policy: per user, per process (the local cache).
    "DEFAULT_THROTTLE_RATES": {"simulate": os.environ.get("GANGWEB_SIMULATE_RATE", "30/min")},
    # JSON nested past the parser's recursion limit is a 400, not a crash (gangweb/api/v1/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "gangweb.api.v1.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "gangweb API",
    "DESCRIPTION": "Gang scheduling on Kubernetes 1.37: the cluster, the preemption ledger, what-if plans "
    "(docs/design.md, API v1). Errors are RFC 9457 application/problem+json.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The document, Swagger UI and Redoc are read like the API: signed in (open only where the dashboard is,
    # the demo), never anonymously on a deployed dashboard's public port.
    "SERVE_PERMISSIONS": ["gangweb.api.v1.access.Reads"],
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "PREPROCESSING_HOOKS": ["gangweb.api.v1.schema.only_v1"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "gangweb.api.v1.schema.problems",
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "RequestStateEnum": "scheduler.preemption.models.RequestState",
        "EvictionStateEnum": "scheduler.preemption.models.EvictionState",
        "PlanSourceEnum": "scheduler.preemption.models.PlanSource",
        "PodGroupStateEnum": "gangweb.api.v1.serializers.PODGROUP_STATES",
        "SimulationSourceEnum": "gangweb.api.v1.serializers.SIMULATION_SOURCES",
        "GangStateEnum": "gangweb.api.v1.summaries.GANG_STATES",
        "MapGangStateEnum": "gangweb.api.v1.page_serializers.MAP_GANG_STATES",
        "SinkKindEnum": "gangweb.notify.models.SinkKind",
        "DeliveryStateEnum": "gangweb.notify.models.DeliveryState",
    },
    # Served from the sidecar package: clusters are often air-gapped (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# What an uploaded snapshot may take in memory, read and planned in the snapshot worker beside the web
# process (its address space, RLIMIT_AS; gangweb/api/v1/uploads.py); past it the upload is a 413.
GANGWEB_SNAPSHOT_MEMORY_BYTES = env_int("GANGWEB_SNAPSHOT_MEMORY_BYTES", 512 * 2**20)
# How long one reading of the live cluster serves the API's nodes/podgroups/pending/usage (seconds).
GANGWEB_API_CLUSTER_CACHE_SECONDS = env_int("GANGWEB_API_CLUSTER_CACHE_SECONDS", 5)
# GPU usage over time: one sample this often (Celery beat, gangweb.sample_usage), six hours kept.
GANGWEB_USAGE_SAMPLE_SECONDS = env_int("GANGWEB_USAGE_SAMPLE_SECONDS", 60)
CELERY_BEAT_SCHEDULE["sample-usage"] = {
    "task": "gangweb.sample_usage",
    "schedule": float(GANGWEB_USAGE_SAMPLE_SECONDS),
    "options": {"expires": float(GANGWEB_USAGE_SAMPLE_SECONDS)},
}

# --- Notifications (docs/notifications.md) ---------------------------------------------------------
# The hosts (``host`` or ``host:port``) a sink's URL may name; a sink anywhere else is refused.
GANGWEB_NOTIFY_ALLOWED_HOSTS = env_list("GANGWEB_NOTIFY_ALLOWED_HOSTS", [])
# One try's longest wait for a sink's answer (connect at most 3 s of it).
GANGWEB_NOTIFY_TIMEOUT_SECONDS = env_float("GANGWEB_NOTIFY_TIMEOUT_SECONDS", 5.0)
# A failed try is repeated after a pause that doubles from the first value up to the second.
GANGWEB_NOTIFY_BACKOFF_SECONDS = env_float("GANGWEB_NOTIFY_BACKOFF_SECONDS", 1.0)
GANGWEB_NOTIFY_BACKOFF_MAX_SECONDS = env_float("GANGWEB_NOTIFY_BACKOFF_MAX_SECONDS", 300.0)
# A delivery still failing this long after its ledger event is given up (and shown as such).
GANGWEB_NOTIFY_GIVE_UP_SECONDS = env_float("GANGWEB_NOTIFY_GIVE_UP_SECONDS", 86400.0)
# How often beat hands due deliveries whose task was lost (broker down, worker killed) to a worker.
GANGWEB_NOTIFY_SWEEP_SECONDS = env_float("GANGWEB_NOTIFY_SWEEP_SECONDS", 10.0)
CELERY_BEAT_SCHEDULE["notify-sweep"] = {
    "task": "gangweb.notify.sweep",
    "schedule": GANGWEB_NOTIFY_SWEEP_SECONDS,
    "options": {"expires": GANGWEB_NOTIFY_SWEEP_SECONDS},
}

# --- Idle GPU time (docs/idle.md; docs/design.md "Idle GPU time") ---------------------------------
# A gang's health change is recorded once it has held this long (a gang being deleted is not broken).
GANGWEB_BROKEN_SETTLE_SECONDS = env_float("GANGWEB_BROKEN_SETTLE_SECONDS", 0.5)
# The reaper, per namespace like the modes: "report" (default) records broken gangs; "evict" ends what
# is left of one as one unit once it has been broken this long with no member being restarted.
GANGWEB_REAPERS = ("report", "evict")
GANGWEB_REAPER = env_choice("GANGWEB_REAPER", GANGWEB_REAPERS)
GANGWEB_NAMESPACE_REAPERS = env_namespace_map("GANGWEB_NAMESPACE_REAPERS", GANGWEB_REAPERS)
GANGWEB_REAP_GRACE_SECONDS = env_int("GANGWEB_REAP_GRACE_SECONDS", 300)
# Per-GPU activity from the Prometheus that scrapes dcgm-exporter (empty: no activity source). Auth: a
# bearer token, or user:password in the URL.
GANGWEB_PROMETHEUS_URL = os.environ.get("GANGWEB_PROMETHEUS_URL", "")
GANGWEB_PROMETHEUS_TOKEN = os.environ.get("GANGWEB_PROMETHEUS_TOKEN", "")
GANGWEB_PROMETHEUS_TIMEOUT_SECONDS = env_float("GANGWEB_PROMETHEUS_TIMEOUT_SECONDS", 5.0)
# kube-scheduler's own /metrics, read in observe mode to show its preemption figures beside gangweb's
# (scheduler/nativemetrics.py; docs/pipeline.md "kube-scheduler's figures"). Empty: not read. HTTPS is checked
# against the CA file (empty: the system's roots); a client certificate or a bearer token when it asks for one.
GANGWEB_SCHEDULER_METRICS_URL = os.environ.get("GANGWEB_SCHEDULER_METRICS_URL", "")
GANGWEB_SCHEDULER_METRICS_CA = os.environ.get("GANGWEB_SCHEDULER_METRICS_CA", "")
GANGWEB_SCHEDULER_METRICS_CERT = os.environ.get("GANGWEB_SCHEDULER_METRICS_CERT", "")
GANGWEB_SCHEDULER_METRICS_KEY = os.environ.get("GANGWEB_SCHEDULER_METRICS_KEY", "")
GANGWEB_SCHEDULER_METRICS_TOKEN = os.environ.get("GANGWEB_SCHEDULER_METRICS_TOKEN", "")
# An allocated GPU is idle when its activity (0-1) stayed below the threshold over the whole window.
GANGWEB_IDLE_THRESHOLD = env_float("GANGWEB_IDLE_THRESHOLD", 0.05)
GANGWEB_IDLE_WINDOW_SECONDS = env_int("GANGWEB_IDLE_WINDOW_SECONDS", 60 if DEMO else 600)
# The idle figure: one sample this often (Celery beat, gangweb.sample_idle), two days kept.
GANGWEB_IDLE_SAMPLE_SECONDS = env_int("GANGWEB_IDLE_SAMPLE_SECONDS", 10 if DEMO else 60)
CELERY_BEAT_SCHEDULE["sample-idle"] = {
    "task": "gangweb.sample_idle",
    "schedule": float(GANGWEB_IDLE_SAMPLE_SECONDS),
    "options": {"expires": float(GANGWEB_IDLE_SAMPLE_SECONDS)},
}

# --- Logging: one JSON object per line -------------------------------------------------------
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").upper()
# Celery says a line per task run (every few seconds in the demo, in its terminal): there at WARNING
# unless asked for more; workers elsewhere log at their own --loglevel.
CELERY_LOG_LEVEL = os.environ.get("GANGWEB_CELERY_LOG_LEVEL", "WARNING" if DEMO else LOG_LEVEL).upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        }
    },
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {"level": "WARNING"},
        "kubernetes": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
        "celery": {"level": CELERY_LOG_LEVEL},
        "uvicorn.error": {"level": "WARNING"},
    },
}
