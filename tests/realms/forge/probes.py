"""Attack code run inside sandboxes: as the runtime's uid (a script in the home) and
through run_code. Each prints or writes one JSON object of outcomes."""

from __future__ import annotations

# Shared by both: tries the network and the host's files; `TARGETS` is a JSON object
# the test fills in (listener port, paths that must stay invisible).
ESCAPES = r"""
import json, os, socket

def tcp(host, port):
    try:
        with socket.create_connection((host, port), timeout=2):
            return "connected"
    except OSError as exc:
        return "refused: " + type(exc).__name__

def readable(path):
    try:
        with open(path, "rb") as handle:
            handle.read(64)
        return True
    except OSError:
        return False

def listable(path):
    try:
        os.listdir(path)
        return True
    except OSError:
        return False

def escapes(targets):
    out = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}
    out["tcp_listener"] = tcp("127.0.0.1", targets["port"])
    out["tcp_outside"] = tcp("1.1.1.1", 53)
    out["other_home"] = [readable(p) or listable(p) for p in targets["other"]]
    out["keystore"] = readable(targets["keystore"])
    out["database"] = readable(targets["database"])
    out["bearpit_home_exists"] = os.path.exists(targets["bearpit_home"])
    try:
        out["root_entries"] = sorted(os.listdir("/root"))
    except OSError:
        out["root_entries"] = []
    out["birth_readable"] = readable("/home/agent/.bearpit/birth.json")
    out["environ_leaks"] = []
    for pid in targets.get("pids", []) + [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            data = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if targets["needle"].encode() in data:
            out["environ_leaks"].append(str(pid))
    out["visible_pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    return out
"""

FORK_BOMB = r"""
import os, time
kids, error = 0, ""
while kids < 10000:
    try:
        pid = os.fork()
    except OSError as exc:
        error = type(exc).__name__
        break
    if pid == 0:
        os.close(1)
        os.close(2)
        time.sleep(30)
        os._exit(0)
    kids += 1
print("FORK", kids, error, flush=True)
"""

MEMORY_HOG = r"""
import sys
hog = []
for step in range(64):
    hog.append(bytearray(16 * 1024 * 1024))
    print("MEM", (step + 1) * 16, flush=True)
print("MEM survived", flush=True)
"""

DISK_FILL = r"""
import os, sys
target = sys.argv[1] if len(sys.argv) > 1 else "/home/agent/fill"
os.makedirs(target, exist_ok=True)
written, error, index = 0, "", 0
chunk = b"x" * (1024 * 1024)
try:
    while written < 200 * 1024 * 1024:
        with open(f"{target}/f{index}", "wb") as handle:
            for _ in range(4):
                handle.write(chunk)
                handle.flush()
                written += len(chunk)
        index += 1
except OSError as exc:
    error = type(exc).__name__ + ":" + str(exc.errno)
print("DISK", written, error, flush=True)
"""

# Every directory the sandbox can create a file in, outside the places it owns.
WRITABLE = r"""
import json, os
ALLOWED = ("/home/agent", "/realm/shared", "/tmp", "/proc", "/sys", "/dev")
found = []
def try_write(path):
    probe = os.path.join(path, ".bearpit-write-probe")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True
for root, dirs, files in os.walk("/", topdown=True):
    if root == "/" or not root.startswith(ALLOWED):
        if try_write(root):
            found.append(root)
    dirs[:] = [d for d in dirs if not os.path.join(root, d).startswith(ALLOWED)
               and not os.path.islink(os.path.join(root, d))]
for extra in ("/dev", "/dev/shm", "/dev/mqueue", "/proc/self", "/run", "/run/bearpit"):
    if os.path.isdir(extra) and try_write(extra):
        found.append(extra)
mounts = [line.split()[3:5] for line in open("/proc/self/mountinfo")]
print(json.dumps({"writable": sorted(set(found)), "mounts": mounts}))
"""
