# The agent image for BEARPIT_SANDBOX=docker: Python, git and the agent runtime, nothing else.
# Build from the repository root:
#   docker build -f deploy/agent.Dockerfile -t bearpit-agent:latest .
# or, with podman and no registry at hand, deploy/build-agent-image (it builds a Debian
# base with debootstrap and passes it as BASE).
# Containers run as the agent's own host uid (set at start), with a read-only root
# filesystem, the agent's home at /home/agent and the platform sockets at /run/bearpit.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

# A CA bundle for pip, when the build must trust more than pip's own bundle (a
# TLS-inspecting proxy); deploy/build-agent-image passes the host's one.
ARG PIP_CA_BUNDLE=

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git, for the task board's worktrees: realmtools runs git in the agent's run_code view
# (a sibling container of this image), never on the host.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

# The runtime's own dependencies only, pinned to uv.lock: it imports nothing from the
# platform. python3, not python: a plain Debian base has only the former.
COPY deploy/agent-requirements.txt /opt/bearpit/requirements.txt
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-deps ${PIP_CA_BUNDLE:+--cert "$PIP_CA_BUNDLE"} \
        -r /opt/bearpit/requirements.txt \
 && /opt/venv/bin/pip check

# Last, so a runtime change rebuilds only this layer. Compiled here because containers
# may not write bytecode (read-only root): without it every start compiles from source.
# The .pth file puts it on the venv's path even in isolated mode (python -I, as run_code
# runs), where PYTHONPATH is ignored.
COPY runtime /opt/bearpit/runtime
RUN /opt/venv/bin/python -m compileall -q /opt/bearpit/runtime \
 && echo /opt/bearpit > "$(/opt/venv/bin/python -c \
        'import sysconfig; print(sysconfig.get_path("purelib"))')/bearpit.pth"
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONPATH=/opt/bearpit \
    HOME=/home/agent

RUN mkdir -p /home/agent /realm/shared /run/bearpit && chmod 0755 /home/agent
WORKDIR /home/agent
# No USER line: the platform passes --user <agent uid>:<realm gid>; never root.
ENTRYPOINT []
CMD ["python", "-m", "runtime", "/home/agent/.bearpit/birth.json"]
