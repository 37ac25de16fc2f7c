# One image for the three processes of deploy/ (web, webhook, worker); the command picks the role.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY gangweb gangweb
COPY scheduler scheduler
COPY admission admission
COPY templates templates
COPY static static
COPY manage.py ./
RUN pip install --no-cache-dir -c constraints.txt -e . && useradd --uid 10001 --no-create-home gangweb
USER 10001
EXPOSE 8000 8443
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "gangweb.asgi:application"]
