# One image for gangweb's four processes (deploy/base): the command picks the role (README "Container image").
#   web      uvicorn --host 0.0.0.0 --port 8000 --lifespan off --no-access-log --timeout-graceful-shutdown 10 gangweb.asgi:application
#   webhook  gangweb webhook serve --port 8443 --cert /tls/tls.crt --key /tls/tls.key
#   worker   celery -A gangweb worker --concurrency 2
#   beat     celery -A gangweb beat --schedule /var/lib/gangweb/celerybeat-schedule  (after: gangweb migrate)
# Built by `make release` (scripts/release.py) from the wheel it writes to dist/ and from requirements.lock
# (every runtime dependency pinned with its sha256; pip refuses anything else; their wheels are downloaded
# beforehand into dist/wheels by `pip download --require-hashes`, so the build itself needs no network),
# on a base pinned by digest:
# `make release` passes PYTHON_BASE=localhost/gangweb-base@sha256:... (Debian bookworm's python3.11, made by
# mmdebstrap from Debian's mirror); the default below is the same Python from a registry, for builders with one.
# Runs as uid 10001 on a read-only root filesystem: everything is compiled at build time, and the only writable
# paths are /tmp and GANGWEB_VAR_DIR (/var/lib/gangweb), emptyDirs in deploy/ (`docker run --read-only
# --tmpfs /tmp --tmpfs /var/lib/gangweb ...` outside Kubernetes). Only the wheel's packages are in the image: no
# checkout, no test tooling (kubetestserver/, tests/).
ARG PYTHON_BASE=docker.io/library/python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

FROM ${PYTHON_BASE} AS build
ARG VERSION=0.1.0
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.lock /build/requirements.lock
COPY dist/wheels /build/wheels
COPY dist/gangweb-${VERSION}-py3-none-any.whl /build/
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --require-hashes --no-deps --no-index --find-links /build/wheels -r /build/requirements.lock \
    && /opt/venv/bin/pip install --no-deps --no-index /build/gangweb-${VERSION}-py3-none-any.whl \
    && /opt/venv/bin/python -m compileall -q /opt/venv

FROM ${PYTHON_BASE}
ARG PYTHON_BASE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="gangweb" \
      org.opencontainers.image.description="Gang scheduling on Kubernetes 1.37: admission webhook, atomic preemption engine, live dashboard" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/gangweb/gangweb" \
      org.opencontainers.image.base.name="${PYTHON_BASE}"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=gangweb.settings \
    GANGWEB_VAR_DIR=/var/lib/gangweb \
    HOME=/tmp
RUN groupadd --gid 10001 gangweb \
    && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin gangweb \
    && install -d -o 10001 -g 10001 /var/lib/gangweb
COPY --from=build /opt/venv /opt/venv
WORKDIR /var/lib/gangweb
USER 10001:10001
EXPOSE 8000 8443 9100
CMD ["uvicorn", "--host", "0.0.0.0", "--port", "8000", "--lifespan", "off", "--no-access-log", "--timeout-graceful-shutdown", "10", "gangweb.asgi:application"]
