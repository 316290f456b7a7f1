# The platform image: every process of deploy/compose.yaml (web, worker, beat, homeserver,
# gateway, realmtools, migrate) runs from it with its own command.
ARG BASE=docker.io/library/python:3.11-slim-bookworm
FROM ${BASE}

# bubblewrap + util-linux (setpriv, prlimit) + e2fsprogs (capped homes) for bwrap sandboxes.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux e2fsprogs \
 && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir uv

WORKDIR /opt/bearpit
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY manage.py ./
COPY bearpit bearpit
COPY realms realms
COPY ledger ledger
COPY chronicle chronicle
COPY scribe scribe
COPY runtime runtime
COPY templates templates
COPY static static
COPY examples examples
COPY deploy/healthcheck.py deploy/healthcheck.py
RUN uv sync --frozen --no-dev
ENV PATH=/opt/bearpit/.venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=bearpit.settings \
    PYTHONUNBUFFERED=1
