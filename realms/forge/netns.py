"""Open egress for bubblewrap sandboxes: a network namespace of the agent's own, with
outbound NAT by pasta (Debian package ``passt``) and nothing of the host's in reach.

The host's network namespace would hand the agent every service bound on the host's
loopback (the database, Redis, the platform's API) and the host's abstract Unix sockets.
So an open-egress sandbox gets a persistent namespace (an nsfs bind mount under
``/run/bearpit/netns``, host-wide like the uid leases) that bwrap is started inside.

pasta copies the host's address into the namespace and NATs what leaves it through
sockets on the host. It is told to forward no port in either direction (``-t/-u/-T/-U
none``: its default would splice the namespace's loopback to the host's) and not to map
the gateway address to the host (``--no-map-gw``). What pasta would still carry to the
host is traffic to the host's *other* addresses (a second interface, a link-local IPv6
address): an nftables output filter inside the namespace, written before pasta starts
and out of the agent's reach (it has no capabilities), refuses every address the host
has. Addresses the host gains later are not covered.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

NETNS_DIR = Path("/run/bearpit/netns")
_PASTA = "pasta"


class NetnsError(RuntimeError):
    """The namespace, its filter or pasta could not be set up."""


def path_for(install_tag: str, realm_id: str, agent_id: str) -> Path:
    return NETNS_DIR / f"{install_tag}--{realm_id}--{agent_id}"


def _pid_file(ns: Path) -> Path:
    return ns.with_name(ns.name + ".pasta.pid")


def _run(argv: list[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetnsError(f"{argv[0]}: {exc}") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if "syslog" not in ln]
        raise NetnsError(f"{argv[0]} failed ({done.returncode}): {' '.join(lines)[-500:]}")
    return done.stdout


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Never reachable with open egress, whatever the host's interfaces: link-local
#: (metadata services) and the shared address space some clouds serve metadata from.
ALWAYS_REFUSED: tuple[Network, ...] = (
    ipaddress.ip_network("169.254.0.0/16"),
    ipaddress.ip_network("100.64.0.0/10"),
    ipaddress.ip_network("fe80::/10"),
)


def host_networks() -> list[Network]:
    """Every address on the host's interfaces (loopback included) and its subnet."""
    found: list[Network] = []
    for link in json.loads(_run(["ip", "-j", "addr", "show"]) or "[]"):
        for info in link.get("addr_info", []):
            with contextlib.suppress(KeyError, ValueError, TypeError):
                address = ipaddress.ip_address(info["local"])
                found.append(ipaddress.ip_network(address))
                found.append(ipaddress.ip_network(f"{address}/{info['prefixlen']}", strict=False))
    return found


def nameservers(resolv_conf: Path = Path("/etc/resolv.conf")) -> list[IPAddress]:
    """The host's DNS servers, which open-egress sandboxes are given (its resolv.conf)."""
    found: list[IPAddress] = []
    with contextlib.suppress(OSError):
        for line in resolv_conf.read_text(encoding="utf-8").splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0] == "nameserver":
                with contextlib.suppress(ValueError):
                    found.append(ipaddress.ip_address(fields[1].split("%", 1)[0]))
    return found


def filter_rules(networks: list[Network], dns: Sequence[IPAddress] = ()) -> str:
    """nftables rules: the namespace's own loopback stays usable, and no packet leaves
    it for the host, its subnets or the always-refused ranges, except DNS (port 53
    only) to the host's nameservers when one sits in such a subnet (a LAN's router).
    A nameserver that is the host itself stays refused."""
    own = {ipaddress.ip_network(n.network_address) for n in networks if n.num_addresses == 1}
    allowed_dns = [a for a in dns if not a.is_loopback and ipaddress.ip_network(a) not in own]
    every = [*networks, *ALWAYS_REFUSED]
    v4 = [str(n) for n in ipaddress.collapse_addresses(n for n in every if n.version == 4)]
    v6 = [str(n) for n in ipaddress.collapse_addresses(n for n in every if n.version == 6)]
    lines = [
        "table inet bearpit_egress {",
        "  chain output {",
        "    type filter hook output priority 0; policy accept;",
        '    oif "lo" accept',
        # Neighbour discovery with the (link-local) IPv6 gateway, or IPv6 stops working.
        "    icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept",
    ]
    for server in allowed_dns:
        family = "ip" if server.version == 4 else "ip6"
        lines.append(f"    {family} daddr {server} meta l4proto {{ tcp, udp }} th dport 53 accept")
    if v4:
        lines.append(f"    ip daddr {{ {', '.join(v4)} }} reject with icmpx type admin-prohibited")
    if v6:
        lines.append(f"    ip6 daddr {{ {', '.join(v6)} }} reject with icmpx type admin-prohibited")
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def _pasta_pid(ns: Path) -> int | None:
    try:
        pid = int(_pid_file(ns).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if str(ns).encode() in cmdline else None


def create(ns: Path) -> None:
    """A fresh namespace at ``ns`` with its filter, then pasta attached to it."""
    destroy(ns)
    NETNS_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    NETNS_DIR.chmod(0o700)
    ns.touch(mode=0o600)
    try:
        _run(["unshare", f"--net={ns}", "true"])
        rules = filter_rules(host_networks(), nameservers())
        _run(["nsenter", f"--net={ns}", "nft", "-f", "-"], stdin=rules)
        # --runas 0: this pasta drops to nobody before it joins the namespace, which
        # nobody may not do; it confines itself (namespaces, seccomp) once set up.
        _run(
            [
                _PASTA, "--runas", "0:0", "--config-net", "--netns", str(ns), "--netns-only",
                "-t", "none", "-u", "none", "-T", "none", "-U", "none", "--no-map-gw",
                "-q", "-P", str(_pid_file(ns)),
            ]
        )  # fmt: skip
        deadline = time.monotonic() + 5
        while _pasta_pid(ns) is None or not _link_up(ns):
            if time.monotonic() > deadline:
                raise NetnsError(f"pasta did not bring up the network of {ns.name}")
            time.sleep(0.02)
    except NetnsError:
        destroy(ns)
        raise


def _link_up(ns: Path) -> bool:
    try:
        links = json.loads(_run(["nsenter", f"--net={ns}", "ip", "-j", "link", "show"]))
    except (NetnsError, ValueError):
        return False
    return any(link.get("ifname") != "lo" and "UP" in link.get("flags", []) for link in links)


def destroy(ns: Path) -> None:
    """Stop pasta and remove the namespace; harmless when there is none."""
    pid = _pasta_pid(ns)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 2
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _pid_file(ns).unlink(missing_ok=True)
    if os.path.ismount(ns):
        done = subprocess.run(["umount", str(ns)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(ns)], capture_output=True, check=False)
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        ns.unlink()


def orphans(install_tag: str, busy_realms: set[str]) -> list[tuple[Path, str]]:
    """(namespace, realm) of this installation's namespaces whose realm has no live
    sandbox: left by a worker that died before releasing them."""
    if not NETNS_DIR.is_dir():
        return []
    found: list[tuple[Path, str]] = []
    for entry in sorted(NETNS_DIR.iterdir()):
        if entry.name.endswith(".pasta.pid"):
            continue
        parts = entry.name.split("--")
        if len(parts) == 3 and parts[0] == install_tag and parts[1] not in busy_realms:
            found.append((entry, parts[1]))
    return found
