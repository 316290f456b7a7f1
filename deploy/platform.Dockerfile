# The platform image: web server, Celery worker and beat (see compose.yaml).
FROM python:3.11-slim-bookworm

# bubblewrap + util-linux (setpriv, prlimit) + e2fsprogs (capped homes) for bwrap sandboxes.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux e2fsprogs \
 && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir uv

WORKDIR /opt/bearpit
COPY pyproject.toml uv.lock README.md ./
COPY bearpit bearpit
COPY realms realms
COPY ledger ledger
COPY chronicle chronicle
COPY scribe scribe
COPY runtime runtime
COPY templates templates
COPY examples examples
RUN uv sync --frozen --no-dev
ENV PATH=/opt/bearpit/.venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=bearpit.settings \
    PYTHONUNBUFFERED=1
