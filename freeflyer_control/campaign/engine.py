"""Running a campaign on Dask ``distributed``: a local process pool by default, a cluster on request.

Both go through one path: a ``Client`` on a ``LocalCluster(processes=True)`` (``--workers N``)
or on the scheduler at ``--scheduler``. Runs are sent in batches (one task flies several runs; :func:`split`)
so that the scheduler's per-task cost stays small next to the simulation; the client alone
writes the journal as batches finish. A worker lost mid-task has its task redone by Dask
elsewhere; the journal keeps the first row of each run, so nothing is counted twice.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from dataclasses import dataclass, field

from freeflyer_control.sim.progress import human_duration

from .journal import Journal
from .spec import CampaignSpec, parse_spec

CONNECT_TIMEOUT_S = 5.0
_SPECS: dict[str, CampaignSpec] = {}  # per worker process: specs parsed once, by digest


def prepare(raw: dict, digest: str) -> CampaignSpec:
    """The worker's parsed spec (parsed and the simulation modules imported once per process)."""
    spec = _SPECS.get(digest)
    if spec is None:
        from . import worker  # noqa: F401 - imports the simulation, once

        spec = _SPECS[digest] = parse_spec(raw)
    return spec


def _warm(raw: dict, digest: str) -> None:
    prepare(raw, digest)


def fly_batch_raw(raw: dict, digest: str, runs: list[int]) -> list[dict]:
    """The task a worker executes: rows of ``runs`` of the spec ``raw``, each with its wall and
    CPU seconds (``_wall_s``, ``_cpu_s``: the worker process's, which flies one run at a time)."""
    from .worker import fly

    spec = prepare(raw, digest)
    rows = []
    for run in runs:
        t0, c0 = time.perf_counter(), time.process_time()
        row = fly(spec, run)
        row["_wall_s"], row["_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        rows.append(row)
    return rows


@dataclass
class Outcome:
    """What a campaign session did: runs flown now, time spent (``startup_s``: connecting or
    starting the pool and preparing the workers; ``wall_s``: from the first task sent to the last
    result; ``compute_s``: the runs' own times; ``cpu_s``: the CPU time they got), runs given up on."""

    flown: int = 0
    startup_s: float = 0.0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    compute_s: float = 0.0
    workers: int = 0
    tasks: int = 0
    lost: list[int] = field(default_factory=list)


def connect(scheduler: str | None, workers: int):
    """(client, cluster or None). Raises ValueError with one line when it cannot."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("campaigns run on Dask distributed, which is not installed: "
                         "pip install 'freeflyer_control[campaign]'") from None
    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker",
                 "distributed.core", "distributed.comm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if scheduler:
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT_S), None
        except (OSError, TimeoutError, ValueError) as exc:
            reason = "nothing answers" if isinstance(exc, (OSError, TimeoutError)) else " ".join(str(exc).split())
            raise ValueError(f"--scheduler {scheduler}: {reason} within {CONNECT_TIMEOUT_S:g} s; start one with "
                             "`dask scheduler` and give its tcp://HOST:8786 address") from None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


def split(spec: CampaignSpec, pending: list[int], workers: int) -> list[list[int]]:
    """The tasks: the spec's ``batch`` runs each, else guided self-scheduling -- each task takes
    a quarter of a worker's share of the runs still unassigned (at most 25), so tasks shrink to
    one run towards the end and no worker waits long for another's last task."""
    if spec.batch:
        return [pending[k:k + spec.batch] for k in range(0, len(pending), spec.batch)]
    tasks, k = [], 0
    while k < len(pending):
        size = max(1, min(25, math.ceil((len(pending) - k) / (4 * max(workers, 1)))))
        tasks.append(pending[k:k + size])
        k += size
    return tasks


def run_campaign(spec: CampaignSpec, journal: Journal, *, scheduler: str | None = None,
                 workers: int | None = None, progress=None) -> Outcome:
    """Fly every run of ``spec`` that ``journal`` does not hold yet; rows go to the journal as
    they finish. ``progress(done, total, failed, eta_s)`` is called after each batch."""
    from distributed import as_completed

    pending = [i for i in range(spec.runs) if i not in journal.rows]
    outcome = Outcome()
    if not pending:
        return outcome
    t_start = time.perf_counter()
    client, cluster = connect(scheduler, workers or os.cpu_count() or 1)
    try:
        digest = spec.digest()
        # Every worker parses the spec (loads the robot) before the clock of the runs starts;
        # a worker that joins later does it in its first task.
        client.run(_warm, spec.raw, digest)
        outcome.startup_s = time.perf_counter() - t_start
        n_workers = len(client.scheduler_info().get("workers", {})) or (workers or 1)
        outcome.workers = n_workers
        batches = split(spec, pending, n_workers)  # submitted in order: Dask runs them first in, first out
        outcome.tasks = len(batches)
        t0 = time.perf_counter()
        futures = [client.submit(fly_batch_raw, spec.raw, digest, b, pure=False) for b in batches]
        runs_of = dict(zip(futures, batches))
        failed = sum(1 for r in journal.rows.values() if r.get("status") == "failed")
        for future in as_completed(futures):
            try:
                rows = future.result()
            except Exception:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths
                outcome.lost += runs_of[future]
                continue
            for row in rows:
                outcome.compute_s += row.pop("_wall_s", 0.0)
                outcome.cpu_s += row.pop("_cpu_s", 0.0)
            outcome.flown += journal.record(rows)
            failed += sum(1 for r in rows if r.get("status") == "failed")
            if progress is not None:
                elapsed = time.perf_counter() - t0
                left = spec.runs - len(journal.rows) - len(outcome.lost)
                progress(len(journal.rows), spec.runs, failed, elapsed / outcome.flown * left if outcome.flown else None)
        outcome.wall_s = time.perf_counter() - t0
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return outcome


class CampaignProgress:
    """``progress(done, total, failed, eta_s)``: a bar on stderr, in place on a terminal."""

    def __init__(self, stream=None, width: int = 30):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width

    def __call__(self, done: int, total: int, failed: int, eta_s: float | None) -> None:
        filled = int(round(self.width * done / total)) if total else self.width
        text = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} runs"
        if failed:
            text += f", {failed} failed"
        if eta_s is not None and done < total:
            text += f", about {human_duration(eta_s)} left"
        end = "\n" if done >= total or not self.tty else ""
        self.stream.write(("\r" + text + "\033[K" if self.tty else text) + end)
        self.stream.flush()
