# The platform image: every process of deploy/compose.yaml (web, worker, beat, homeserver,
# gateway, realmtools, migrate) runs from it with its own command. Build it with
#   docker build -f deploy/platform.Dockerfile -t bearpit-platform:latest .
# or, with podman and no registry at hand, deploy/build-platform-image (a Debian base
# made with debootstrap, passed as BASE).
ARG BASE=docker.io/library/python:3.11-slim-bookworm
FROM ${BASE}

# A CA bundle for the package downloads, when the build must trust more than the
# defaults (a TLS-inspecting proxy); deploy/build-platform-image passes the host's one.
ARG PIP_CA_BUNDLE=

# bubblewrap + util-linux (setpriv, prlimit) + e2fsprogs (capped homes) for bwrap
# sandboxes; passt + nftables for open-egress ones. python3-venv: a plain Debian base
# has no venv module (the official one ignores it).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        bubblewrap util-linux e2fsprogs passt nftables ca-certificates python3-venv \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_PYTHON=python3 \
    UV_PYTHON_DOWNLOADS=never \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1
RUN python3 -m venv /opt/uv \
 && /opt/uv/bin/pip install ${PIP_CA_BUNDLE:+--cert "$PIP_CA_BUNDLE"} uv \
 && ln -s /opt/uv/bin/uv /usr/local/bin/uv

WORKDIR /opt/bearpit
# Dependencies first, pinned to uv.lock: a code change rebuilds only the layers below.
COPY pyproject.toml uv.lock README.md ./
RUN env ${PIP_CA_BUNDLE:+SSL_CERT_FILE="$PIP_CA_BUNDLE"} uv sync --frozen --no-dev --no-install-project
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
RUN env ${PIP_CA_BUNDLE:+SSL_CERT_FILE="$PIP_CA_BUNDLE"} uv sync --frozen --no-dev
ENV PATH=/opt/bearpit/.venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=bearpit.settings \
    BEARPIT_HOME=/var/lib/bearpit
CMD ["python", "manage.py", "help"]
