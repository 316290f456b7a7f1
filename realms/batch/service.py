"""Creating a batch and recording what each of its runs became.

A batch is planned once: its runs, each with the parameter values it launches with (the
shared values, then one cell of the grid, cycled in order). The plan is stored on the
``Batch`` row before anything launches, and each run's realm id is written the moment
the realm exists, so whoever continues the batch (a resumed ``pit_batch``, the
server's driver) knows exactly which runs are done, which are live and which never
started.

A batch the API or the console starts is the server's to drive (``background``): the
``pit_serve`` process's batch driver, or Celery beat's ``batches.advance_all``, calls
:func:`advance_background_batches` every tick period, so it runs to its end with nobody
reading it. A batch ``pit_batch`` runs is that process's own, and is left alone.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from realms.batch.report import write_report
from realms.library import services as library
from realms.models import Batch, Realm
from realms.packages.parameters import (
    missing_parameters,
    scan_parameters,
    validate_parameter_values,
)
from realms.packages.schema.project import TERMINATION_TYPES
from realms.services.launch import LaunchError, LaunchOptions, load_project, realm_slug
from realms.services.queue import QueueRefused, queue_realm

log = logging.getLogger(__name__)

# What counts as "reached the intended ending" when a package does not say: an ending
# the scenario itself produced, as opposed to a limit, a stall or an operator.
DEFAULT_INTENDED = ("referee_verdict", "machine_terminal", "file", "message")
# A package names its own intended endings in this file at its top (ignored by loading).
RESEARCH_FILE = "research.json"
MAX_RUNS = 1000


class BatchError(Exception):
    """A batch that cannot be planned; ``problems`` are located messages."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class BatchRequest:
    package: Path
    count: int
    concurrency: int = 1
    parameters: Mapping[str, str] | None = None
    grid: Mapping[str, Sequence[str]] | None = None
    provider: str = ""
    intended: Sequence[str] | None = None
    package_name: str | None = None
    """The library name the API launched from; the package folder's name otherwise."""
    background: bool = False
    """Whether the server drives it (the API's and the console's batches)."""


def intended_endings(package: Path, override: Sequence[str] | None = None) -> list[str]:
    """The termination kinds that count as the intended ending: ``override``, else the
    package's ``research.json`` ``intended_endings``, else :data:`DEFAULT_INTENDED`."""
    where = "intended"
    kinds: Any = list(override) if override else None
    folder = package if package.is_dir() else package.parent
    research = folder / RESEARCH_FILE
    if kinds is None and research.is_file():
        where = f"{research}: intended_endings"
        try:
            kinds = json.loads(research.read_text(encoding="utf-8")).get("intended_endings")
        except (ValueError, AttributeError) as exc:
            raise BatchError([f"{research}: not a JSON object ({exc})"]) from exc
    if kinds is None:
        return list(DEFAULT_INTENDED)
    if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
        raise BatchError([f"{where}: must be a non-empty list of termination kinds"])
    unknown = [k for k in kinds if k not in TERMINATION_TYPES]
    if unknown:
        raise BatchError(
            [
                f"{where}: unknown termination kind {', '.join(map(repr, unknown))} "
                f"(one of {', '.join(TERMINATION_TYPES)})"
            ]
        )
    return list(dict.fromkeys(kinds))


def grid_cells(grid: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Every combination of the grid's values, in the order given (one empty cell for
    no grid)."""
    names = list(grid)
    return [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(list(grid[n]) for n in names))
    ]


def plan_runs(
    count: int, shared: Mapping[str, str], grid: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    cells = grid_cells(grid)
    return [
        {
            "index": i,
            "parameters": {**shared, **cells[i % len(cells)]},
            "realm_id": None,
            "replaced": [],
        }
        for i in range(count)
    ]


def _check(request: BatchRequest) -> list[str]:
    problems = []
    if not 1 <= request.count <= MAX_RUNS:
        problems.append(f"n: must be within 1..{MAX_RUNS}; got {request.count}")
    if request.concurrency < 1:
        problems.append(f"concurrency: must be at least 1; got {request.concurrency}")
    for name, values in (request.grid or {}).items():
        if not values or any(not isinstance(v, str) for v in values):
            problems.append(f"grid {name}: needs one or more values")
        if name in (request.parameters or {}):
            problems.append(f"grid {name}: also given as a fixed parameter")
    return problems


def create_batch(request: BatchRequest) -> Batch:
    """Validate the package and the request, plan the runs and store the batch."""
    problems = _check(request)
    if problems:
        raise BatchError(problems)
    try:
        project, _ = load_project(request.package)
    except LaunchError as exc:
        raise BatchError([f"package: {p}" for p in exc.problems]) from exc
    intended = intended_endings(request.package, request.intended)
    name = request.package_name or project.metadata.name
    grid = {k: list(v) for k, v in (request.grid or {}).items()}
    shared = dict(request.parameters or {})
    # Every cell is checked now: a bad grid value must refuse the batch, not its 7th run.
    params, _ = scan_parameters(project)
    for cell in grid_cells(grid):
        values = {**shared, **cell}
        problems += validate_parameter_values(params, values)
        missing = missing_parameters(params, values)
        if missing:
            problems.append(
                "required parameters have no value: " + ", ".join(p.name for p in missing)
            )
    if problems:
        raise BatchError(list(dict.fromkeys(problems)))
    return Batch.objects.create(
        batch_id=f"batch-{realm_slug(name)[:50]}-{secrets.token_hex(3)}",
        package_name=name,
        package_path=str(request.package.resolve()),
        count=request.count,
        concurrency=request.concurrency,
        parameters=shared,
        grid=grid,
        provider=request.provider,
        intended=intended,
        runs=plan_runs(request.count, shared, grid),
        background=request.background,
    )


def record_realm(batch_id: str, index: int, realm_id: str) -> None:
    """Run ``index`` is now ``realm_id``; a realm it had before is kept as replaced."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(batch_id=batch_id)
        run = batch.runs[index]
        if run["realm_id"]:
            run["replaced"] = [*run.get("replaced", []), run["realm_id"]]
        run["realm_id"] = realm_id
        batch.save(update_fields=["runs"])


@dataclass(frozen=True)
class Progress:
    unstarted: list[int]
    live: list[str]
    """Realms launched and not yet over."""
    rerun: list[int]
    """Runs whose realm was interrupted before it ended: run again."""
    done: list[str]


def progress(batch: Batch) -> Progress:
    ids = [r["realm_id"] for r in batch.runs if r["realm_id"]]
    states = dict(Realm.objects.filter(realm_id__in=ids).values_list("realm_id", "state"))
    unstarted, live, rerun, done = [], [], [], []
    for run in batch.runs:
        realm_id = run["realm_id"]
        state = states.get(realm_id) if realm_id else None
        if state is None:
            unstarted.append(run["index"])
        elif state == Realm.State.INTERRUPTED:
            rerun.append(run["index"])
        elif state in Realm.TERMINAL_STATES:
            done.append(realm_id)
        else:
            live.append(realm_id)
    return Progress(unstarted, live, rerun, done)


def finish_batch(batch_id: str) -> Batch:
    batch = Batch.objects.get(batch_id=batch_id)
    if batch.state != Batch.State.FINISHED:
        batch.state = Batch.State.FINISHED
        batch.finished_at = timezone.now()
        batch.save(update_fields=["state", "finished_at"])
    return batch


@dataclass(frozen=True)
class LibraryBatch:
    """A batch of a library scenario, as the API and the console ask for one."""

    name: str
    count: int
    concurrency: int = 1
    parameters: Mapping[str, str] | None = None
    grid: Mapping[str, Sequence[str]] | None = None
    provider: str = ""
    intended: Sequence[str] | None = None


def start_library_batch(asked: LibraryBatch, capacity: int) -> Batch:
    """Start a batch of a library scenario (the API's and the console's): plan it, queue
    its first runs, and leave the rest to the server's driver. One transaction: a batch
    whose first runs cannot be queued is not kept.

    Raises :class:`BatchError` (bad request), ``QueueRefused`` (404 unknown scenario, 429
    at capacity, 503 no worker) or ``LaunchError`` (a launch the package refuses)."""
    try:
        scenario = library.resolve(asked.name)
    except library.LibraryError:
        library.sync_examples()  # a bundled example not listed yet
        try:
            scenario = library.resolve(asked.name)
        except library.LibraryError as exc:
            raise QueueRefused(404, str(exc)) from exc
    request = BatchRequest(
        package=library.materialize(scenario),
        count=asked.count,
        concurrency=asked.concurrency,
        parameters=asked.parameters,
        grid=asked.grid,
        provider=asked.provider,
        intended=asked.intended,
        package_name=asked.name,
        background=True,
    )
    with transaction.atomic():
        batch = create_batch(request)
        return advance_batch(batch.batch_id, capacity)


def advance_batch(batch_id: str, capacity: int) -> Batch:
    """Move a batch the API started along: queue runs while it has room (its own
    concurrency and the installation's capacity), and once every run has ended, finish
    it and write its report. The realms themselves are provisioned and ticked by
    whatever runs the API's realms (the workers, or ``pit_serve``).

    The batch's row is locked while it moves, so two callers at once (the driver and a
    read of the API) never queue the same run twice."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(batch_id=batch_id)
        if batch.state == Batch.State.FINISHED:
            return batch
        return _advance(batch, capacity)


def _advance(batch: Batch, capacity: int) -> Batch:
    batch_id = batch.batch_id
    state = progress(batch)
    live = len(state.live)
    for index in sorted(state.rerun + state.unstarted):
        if live >= batch.concurrency:
            break
        try:
            realm = queue_realm(
                batch.package_name,
                LaunchOptions(
                    parameters=dict(batch.runs[index]["parameters"]),
                    provider=batch.provider or None,
                ),
                capacity=capacity,
            )
        except QueueRefused as exc:
            if exc.status == 429:  # at capacity: the next read tries again
                break
            raise
        record_realm(batch_id, index, realm.realm_id)
        live += 1
    batch = Batch.objects.get(batch_id=batch_id)
    state = progress(batch)
    if not (state.unstarted or state.rerun or state.live):
        batch = finish_batch(batch_id)
        write_report(batch)
    return batch


def background_batch_ids() -> list[str]:
    """The batches the server drives that have not finished, oldest first."""
    rows = Batch.objects.filter(background=True, state=Batch.State.RUNNING)
    return list(rows.order_by("created_at", "id").values_list("batch_id", flat=True))


def advance_background_batches(capacity: int) -> dict[str, str]:
    """One pass of the server's batch driver: advance every batch it drives. A batch that
    cannot move now (its scenario gone from the library, nothing to run its realms) is
    logged and tried again on the next pass; the others still move. Batch id → state."""
    states = {}
    for batch_id in background_batch_ids():
        try:
            states[batch_id] = str(advance_batch(batch_id, capacity).state)
        except (QueueRefused, LaunchError) as exc:
            log.warning("batch %s cannot move on now: %s", batch_id, exc)
    return states
