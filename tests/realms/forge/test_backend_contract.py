"""What each backend asks of bwrap and of the container engine, read from the
arguments it builds (the engine itself is exercised where one exists)."""

from __future__ import annotations

import ast
import ipaddress
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker
from packaging.utils import canonicalize_name

from realms.forge import layout, netns
from realms.forge.backends import SandboxError, get_backend
from realms.forge.backends.bwrap import _read_only_paths, bwrap_command
from realms.forge.backends.docker import DockerBackend, container_argv
from realms.forge.command import runtime_args_of, runtime_argv
from realms.forge.secrets import mask_secrets, secrets_in_config
from realms.forge.spec import Egress, SandboxSpec
from tests.realms.forge.conftest import SMALL


def _spec(tmp_path: Path, egress: Egress = Egress.MODEL_ONLY, shared: bool = True) -> SandboxSpec:
    return SandboxSpec(
        realm_id="r1",
        agent_id="alpha",
        host_uid=400123,
        host_gid=400120,
        home=tmp_path / "home",
        shared=tmp_path / "shared" if shared else None,
        sockets=tmp_path / "run",
        log_path=tmp_path / "alpha.log",
        limits=SMALL,
        egress=egress,
    )


def _pairs(args: list[str], flag: str) -> list[tuple[str, str]]:
    return [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == flag]


def test_bwrap_runtime_view(tmp_path):
    args = bwrap_command(_spec(tmp_path), ["python", "-m", "runtime"], exec_mode=False)
    assert "--unshare-net" in args and "--share-net" not in args
    assert "--die-with-parent" not in args  # must outlive a worker restart
    assert (str(tmp_path / "run"), layout.SANDBOX_SOCKETS) in _pairs(args, "--ro-bind")
    run_tmpfs = next(i for i, a in enumerate(args) if a == "--tmpfs" and args[i + 1] == "/run")
    assert run_tmpfs < args.index(str(tmp_path / "run"))  # /run first, then /run/bearpit
    assert (str(tmp_path / "home"), layout.SANDBOX_HOME) in _pairs(args, "--bind")
    assert (str(tmp_path / "shared"), layout.SANDBOX_SHARED) in _pairs(args, "--bind")
    # The private /tmp is laid first, so a checkout or venv under the host's /tmp is bound
    # on top of it rather than hidden by it.
    private_tmp = next(
        i for i, a in enumerate(args) if a == "--tmpfs" and args[i + 1] == layout.SANDBOX_TMP
    )
    code = {str(p) for p in _read_only_paths()}
    code_binds = [i for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] in code]
    assert code_binds and all(private_tmp < i for i in code_binds)
    setpriv = args[args.index("--") + 1 :]
    assert setpriv[:3] == ["/usr/bin/setpriv", "--reuid=400123", "--regid=400120"]
    assert "--clear-groups" in setpriv and "--bounding-set=-all" in setpriv
    assert setpriv[-3:] == ["python", "-m", "runtime"]


def test_bwrap_open_egress_and_exec_view(tmp_path):
    open_args = bwrap_command(_spec(tmp_path, Egress.OPEN), ["x"], exec_mode=False)
    assert "--unshare-net" not in open_args
    exec_args = bwrap_command(_spec(tmp_path, Egress.OPEN, shared=False), ["x"], exec_mode=True)
    assert "--unshare-net" in exec_args and "--die-with-parent" in exec_args
    assert f"{layout.SANDBOX_HOME}/.bearpit" in exec_args  # the tmpfs hiding birth.json
    assert layout.SANDBOX_SOCKETS not in exec_args
    assert layout.SANDBOX_SHARED not in exec_args


def test_docker_container_contract(tmp_path):
    backend = DockerBackend()
    kwargs = backend._run_kwargs(_spec(tmp_path), exec_mode=False)
    assert kwargs["network_mode"] == "none"
    assert kwargs["user"] == "400123:400120"
    assert kwargs["read_only"] is True and kwargs["cap_drop"] == ["ALL"]
    assert kwargs["mem_limit"] == SMALL.memory_bytes
    assert kwargs["pids_limit"] == SMALL.max_processes
    # Always explicit: an engine's defaults may exceed its own hard limits, and then no
    # container starts; nproc is the same cap as the process backends' prlimit.
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in kwargs["ulimits"]}
    assert ulimits["nproc"] == (SMALL.max_processes, SMALL.max_processes)
    assert ulimits["nofile"] == (4096, 4096)
    assert ulimits["fsize"] == (SMALL.disk_bytes, SMALL.disk_bytes)
    assert ulimits["core"] == (0, 0)
    assert kwargs["volumes"][str(tmp_path / "run")] == {
        "bind": layout.SANDBOX_SOCKETS,
        "mode": "ro",
    }
    exec_kwargs = backend._run_kwargs(_spec(tmp_path), exec_mode=True)
    assert str(tmp_path / "run") not in exec_kwargs["volumes"]
    assert f"{layout.SANDBOX_HOME}/.bearpit" in exec_kwargs["tmpfs"]


def test_docker_runs_the_runtime_from_its_image():
    bootstrap = runtime_argv(await_birth_s=60)
    assert runtime_args_of(bootstrap) == ["--await-birth", "60", "/home/agent/.bearpit/birth.json"]
    # Isolated in the container too: the working directory is the agent's home.
    assert container_argv(bootstrap)[-9:] == [
        "python", "-I", "-B", "-u", "-m", "runtime",
        "--await-birth", "60", "/home/agent/.bearpit/birth.json",
    ]  # fmt: skip
    script = [sys.executable, "/home/agent/resources/probe.py", "x"]
    assert runtime_args_of(script) is None
    assert container_argv(script)[-3:] == ["python", "/home/agent/resources/probe.py", "x"]
    assert not any(sys.executable in arg or "/runtime" in arg for arg in container_argv(bootstrap))


def _lock_closure(lock: dict[str, Any], roots: list[str]) -> dict[str, str]:
    """Name → version of ``roots`` and everything they need on the image's Python."""
    packages = {p["name"]: p for p in lock["package"]}
    image_python = {"python_full_version": "3.11.2", "python_version": "3.11"}
    found: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = packages[name]["version"]
        for dep in packages[name].get("dependencies", []):
            if "marker" not in dep or Marker(dep["marker"]).evaluate(image_python):
                todo.append(dep["name"])
    return found


RUNTIME_DEPENDENCIES = {"httpx", "jinja2", "jsonschema"}


def test_agent_image_pins_are_the_locked_closure(repo_root):
    """deploy/agent-requirements.txt is installed with --no-deps: it must be exactly the
    runtime's dependencies and theirs, at uv.lock's versions."""
    lock = tomllib.loads((repo_root / "uv.lock").read_text())
    pins: dict[str, str] = {}
    for line in (repo_root / "deploy" / "agent-requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    assert pins == _lock_closure(lock, sorted(RUNTIME_DEPENDENCIES))
    # And those are what the runtime imports from outside the standard library.
    imported: set[str] = set()
    for path in (repo_root / "runtime").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "runtime"}
    assert third_party == RUNTIME_DEPENDENCIES


def test_unknown_backend_is_refused():
    with pytest.raises(SandboxError, match="unknown backend 'vm'"):
        get_backend("vm")


def test_secret_discovery_and_masking():
    config = {
        "model": {"api_key": "sk-abcdef123456", "name": "gpt"},
        "mcp": {"headers": {"Authorization": "Bearer tok-98765432"}},
        "bus": {"password": "hunter2-long"},
        "note": "sk-not-a-secret-because-key-is-plain",
    }
    found = secrets_in_config(config)
    assert set(found) == {
        "sk-abcdef123456",
        "Bearer tok-98765432",
        "tok-98765432",
        "hunter2-long",
    }
    text = "key sk-abcdef123456, header Bearer tok-98765432, bus hunter2-long, model gpt"
    assert mask_secrets(text, found) == (
        "key [redacted], header [redacted], bus [redacted], model gpt"
    )
    assert mask_secrets("abc", ["abc"]) == "abc"  # too short to mask safely


def test_open_egress_filter_refuses_the_host_and_lets_only_dns_to_a_lan_nameserver(tmp_path):
    host = [ipaddress.ip_network("192.0.2.2"), ipaddress.ip_network("192.0.2.0/24")]
    host += [ipaddress.ip_network("127.0.0.1"), ipaddress.ip_network("127.0.0.0/8")]
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 127.0.0.53\n")
    rules = netns.filter_rules(host, netns.nameservers(resolv))
    accepts = [line.strip() for line in rules.splitlines() if line.strip().endswith("accept")]
    # The router's DNS port only; never the host itself, whatever resolv.conf says.
    assert accepts == [
        'oif "lo" accept',
        "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept",
        "ip daddr 192.0.2.1 meta l4proto { tcp, udp } th dport 53 accept",
    ]
    refused = next(line for line in rules.splitlines() if line.strip().startswith("ip daddr {"))
    for network in ("192.0.2.0/24", "127.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10"):
        assert network in refused
