"""Archiving a realm: everything needed to read, audit and re-run it, in one folder.

``archive_realm`` writes ``transcript.txt``, ``report.md``, ``events.jsonl``,
``messages.jsonl``, copies of the realm's ``outputs/``, ``logs/`` and ``recording/`` (its
model calls, ``realms.replay.recording``), and
``manifest.json``: what was run (package and a digest of its files), with which
models, prices, parameters and software versions. Concluding a realm writes it; what it
says comes from the Chronicle (the prices from the KEY event minting each key chronicled), so it
can be written again after the ledger's rows are gone.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import shutil
from pathlib import Path
from typing import Any

from chronicle import report, selectors, transcript
from chronicle.models import now_ms
from realms.forge import layout
from realms.models import Realm
from realms.plan import RealmPlan, plan_of

MANIFEST_VERSION = 1
_SOFTWARE = ("bearpit", "django", "matrix-synapse", "litellm", "mcp")


# Fields of a run_config agent that say which model ran and what it cost.
class UnknownRealmError(LookupError):
    """The realm has neither a row nor a chronicled event."""


def archive_realm(realm_id: str, out_dir: Path | None = None) -> Path:
    """Write the realm's archive and return its folder.

    The folder is ``BEARPIT_HOME/realms/<realm>/archive/`` by default, or
    ``<out_dir>/<realm>/``. Running it again rewrites the archive from the Chronicle.
    """
    try:
        layout.check_realm_id(realm_id)
    except layout.LayoutError as exc:
        raise UnknownRealmError(f"not a valid realm id: {exc}") from None
    if not selectors.realm_known(realm_id):
        raise UnknownRealmError(f"realm {realm_id!r}: no such realm")
    dest = layout.archive_dir(realm_id) if out_dir is None else Path(out_dir) / realm_id
    dest.mkdir(parents=True, exist_ok=True)

    (dest / "transcript.txt").write_text(transcript.render_transcript(realm_id), encoding="utf-8")
    (dest / "report.md").write_text(report.render_report(realm_id), encoding="utf-8")
    _write_jsonl(dest / "events.jsonl", _event_rows(realm_id))
    _write_jsonl(dest / "messages.jsonl", _message_rows(realm_id))
    _copy_tree(layout.outputs_dir(realm_id), dest / "outputs")
    _copy_tree(layout.logs_dir(realm_id), dest / "logs")
    if layout.recording_dir(realm_id).is_dir():
        # The model calls, for replay and fork; an archive rewritten after the realm's
        # folder was cleared keeps the copy it has.
        _copy_tree(layout.recording_dir(realm_id), dest / "recording")

    manifest = build_manifest(realm_id)
    manifest["files"] = _file_digests(dest)
    (dest / "manifest.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return dest


def build_manifest(realm_id: str) -> dict[str, Any]:
    """The reproducibility manifest (without the archive's own file digests)."""
    row = Realm.objects.filter(realm_id=realm_id).first()
    plan = selectors.realm_plan(realm_id)
    if not plan.agents and row is not None:
        plan = plan_of(row)  # chronicled without a config: the row's launch says more
    parameters = dict(plan.parameters) or (row.parameters if row else {})
    return {
        "version": MANIFEST_VERSION,
        "realm_id": realm_id,
        "archived_at_ms": now_ms(),
        "state": selectors.lifecycle_state(realm_id),
        "conclusion": selectors.conclusion(realm_id),
        "package": _package_manifest(row, plan),
        "provider": plan.provider or (row.provider if row else None),
        "parameters": parameters,
        "agents": _agent_manifest(plan, _minted_prices(realm_id)),
        "software": software_versions(),
    }


def software_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in _SOFTWARE:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def package_digest(files: dict[str, bytes]) -> tuple[str, dict[str, str]]:
    """sha256 per file and one sha256 over the sorted ``<digest>  <path>`` lines."""
    per_file = {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())}
    listing = "".join(f"{digest}  {path}\n" for path, digest in per_file.items())
    return hashlib.sha256(listing.encode("utf-8")).hexdigest(), per_file


def _package_manifest(row: Realm | None, plan: RealmPlan) -> dict[str, Any]:
    files = _package_files(row)
    name = (row.package_name if row else "") or plan.package
    out: dict[str, Any] = {"name": name or None}
    if row is not None and row.package_sha256:
        out["recorded_sha256"] = row.package_sha256
    if files is None:
        out["sha256"] = None
        out["files"] = {}
        out["note"] = "the package's files were not available when archiving"
    else:
        out["sha256"], out["files"] = package_digest(files)
    return out


def _package_files(row: Realm | None) -> dict[str, bytes] | None:
    """The package's files: stored in the library, else read from its folder."""
    if row is None:
        return None
    if row.scenario_id is not None:
        stored = {f.path: bytes(f.content) for f in row.scenario.files.all()}  # type: ignore[union-attr]
        if stored:
            return stored
    if row.package_path:
        root = Path(row.package_path)
        if root.is_dir():
            return {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*"))
                if p.is_file() and not p.is_symlink()
            }
    return None


def _agent_manifest(
    plan: RealmPlan, prices: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per agent: the model launch resolved, with the prices the gateway metered at."""
    agents: dict[str, dict[str, Any]] = {}
    for agent in plan.agents:
        resolved = {
            "role": agent.role,
            "provider": agent.provider,
            "model": agent.model,
            "model_category": agent.model_category,
            "effort": agent.effort,
            "context_length": agent.context_length,
            "budget_usd": agent.budget_usd,
            "on_exhausted": agent.on_exhausted,
        }
        agents[agent.id] = {k: v for k, v in resolved.items() if v not in (None, "")}
    for agent_id, metered in prices.items():
        entry = agents.setdefault(agent_id, {})
        for k, v in metered.items():
            if entry.get(k) in (None, ""):
                entry[k] = v
    return agents


def _minted_prices(realm_id: str) -> dict[str, dict[str, Any]]:
    """The model and per-token prices of each agent's latest key, as chronicled when it
    was minted (never the key itself)."""
    fields = ("provider", "model", "input_cost_per_token", "output_cost_per_token")
    return {
        agent_id: {k: key.get(k) for k in fields}
        for agent_id, key in selectors.minted_keys(realm_id).items()
    }


def _event_rows(realm_id: str) -> list[dict[str, Any]]:
    return [
        {"id": e.pk, "ts": e.ts_ms, "kind": e.kind, "payload": e.payload}
        for e in selectors.events(realm_id).iterator()
    ]


def _message_rows(realm_id: str) -> list[dict[str, Any]]:
    return [
        {
            "id": m.pk,
            "ts": m.ts_ms,
            "channel": m.channel,
            "sender": m.sender,
            "sender_agent": m.sender_agent,
            "body": m.body,
            "attachments": m.attachments,
            "matrix_event_id": m.matrix_event_id,
        }
        for m in selectors.messages(realm_id).iterator()
    ]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def _copy_tree(src: Path, dest: Path) -> None:
    """Replace ``dest`` with a copy of ``src`` (an empty folder when there is none)."""
    if dest.exists():
        shutil.rmtree(dest)
    if src.is_dir():
        # Symlinks are copied as links, never followed: an output must not pull in
        # files from outside the realm.
        shutil.copytree(src, dest, symlinks=True)
    else:
        dest.mkdir(parents=True)


def _file_digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.name != "manifest.json"
    }
