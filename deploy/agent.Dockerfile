# The agent image for BEARPIT_SANDBOX=docker: Python and the agent runtime, nothing else.
# Build from the repository root:
#   docker build -f deploy/agent.Dockerfile -t bearpit-agent:latest .
# Containers run as the agent's own host uid (set at start), with a read-only root
# filesystem, the agent's home at /home/agent and the platform sockets at /run/bearpit.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The runtime's own dependencies only: it imports nothing from the platform.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install \
        "httpx>=0.27,<1" \
        "mcp==1.26.0" \
        "anyio>=4" \
        "aiohttp>=3.9" \
        "pydantic>=2.8,<3" \
        "jsonschema>=4.21" \
        "jinja2>=3.1" \
        "pyyaml>=6" \
        "matrix-nio>=0.25"

COPY runtime /opt/bearpit/runtime
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONPATH=/opt/bearpit \
    HOME=/home/agent

RUN mkdir -p /home/agent /realm/shared /run/bearpit && chmod 0755 /home/agent
WORKDIR /home/agent
# No USER line: the platform passes --user <agent uid>:<realm gid>; never root.
ENTRYPOINT []
CMD ["python", "-m", "runtime", "/home/agent/.bearpit/birth.json"]
