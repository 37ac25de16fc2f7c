# One image for gangweb's four processes (deploy/base): the command picks the role (README "Container image").
#   web      uvicorn --host 0.0.0.0 --port 8000 --lifespan off --no-access-log gangweb.asgi:application
#   webhook  python manage.py webhook serve --port 8443 --cert /tls/tls.crt --key /tls/tls.key
#   worker   celery -A gangweb worker --concurrency 2
#   beat     celery -A gangweb beat --schedule /var/lib/gangweb/celerybeat-schedule  (after: python manage.py migrate)
# Runs as uid 10001 on a read-only root filesystem: everything is compiled at build time, and the only writable
# paths are /tmp and GANGWEB_VAR_DIR (/var/lib/gangweb), emptyDirs in deploy/ (`docker run --read-only
# --tmpfs /tmp --tmpfs /var/lib/gangweb ...` outside Kubernetes). The test tooling (kubetestserver/, tests/) is
# not in the image.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY gangweb gangweb
COPY scheduler scheduler
COPY admission admission
COPY manage.py ./
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install -c constraints.txt -e . \
    && /opt/venv/bin/python -m compileall -q /app /opt/venv

FROM python:3.11-slim
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
COPY --from=build /app /app
WORKDIR /app
USER 10001:10001
EXPOSE 8000 8443 9100
CMD ["uvicorn", "--host", "0.0.0.0", "--port", "8000", "--lifespan", "off", "--no-access-log", "gangweb.asgi:application"]
