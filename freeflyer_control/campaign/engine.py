"""Running a campaign on Dask ``distributed``: a local process pool by default, a cluster on request.

Both go through one path: a ``Client`` on a ``LocalCluster(processes=True)`` (``--workers N``)
or on the scheduler at ``--scheduler``. Runs are sent in batches (one task flies several runs; :func:`split`)
so that the scheduler's per-task cost stays small next to the simulation; the client alone
writes the journal as batches finish. A worker lost mid-task has its task redone by Dask
elsewhere; the journal keeps the first row of each run, so nothing is counted twice.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field

from freeflyer_control.inputs.values import shown
from freeflyer_control.sim.progress import human_duration

from .journal import Journal
from .spec import CampaignSpec, parse_spec

CONNECT_TIMEOUT_S = 5.0
DEFAULT_SCHEDULER_PORT = 8786
# A worker process with the simulation imported and a spec parsed: about 230 MB resident
# (measured on planar_4link and spatial_7dof); the cap on --workers counts 300 MB with margin.
WORKER_MEMORY_BYTES = 300 * 2**20
# A Dask handshake is a few hundred bytes; a length beyond this is another protocol's bytes.
_MAX_HANDSHAKE_BYTES = 2**20
_SPECS: dict[str, CampaignSpec] = {}  # per worker process: specs parsed once, by digest


class FilesChanged(ValueError):
    """A worker read files that differ from those the campaign was checked with."""


def prepare(raw: dict, digest: str, files: dict[str, str] | None = None) -> CampaignSpec:
    """The worker's parsed spec (parsed and the simulation modules imported once per process);
    ``files``: the sha256 of the files the client read, which the worker's must equal."""
    spec = _SPECS.get(digest)
    if spec is None:
        from . import worker  # noqa: F401 - imports the simulation, once

        spec = parse_spec(raw)
        if files is not None and spec.files != files:
            changed = sorted(p for p in set(files) | set(spec.files) if files.get(p) != spec.files.get(p))
            raise FilesChanged(f"{changed[0]} changed while the campaign ran (a worker read other contents than "
                               "the campaign was checked with); its runs would mix robots: run the same command "
                               "again once the files are settled")
        _SPECS[digest] = spec
    return spec


def _warm(raw: dict, digest: str, files: dict[str, str] | None = None) -> None:
    ignore_interrupts()
    prepare(raw, digest, files)


def ignore_interrupts() -> None:
    """In a worker process: Ctrl-C (SIGINT reaches the whole process group) is the client's to
    handle; the client stops the workers, which would otherwise each print a traceback."""
    with contextlib.suppress(ValueError):  # not the main thread: nothing to do
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def fly_batch_raw(raw: dict, digest: str, runs: list[int], files: dict[str, str] | None = None) -> list[dict]:
    """The task a worker executes: rows of ``runs`` of the spec ``raw``, each with its wall and
    CPU seconds (``_wall_s``, ``_cpu_s``: the worker process's, which flies one run at a time)."""
    from .worker import fly

    spec = prepare(raw, digest, files)
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


def scheduler_address(text: str) -> tuple[str, int]:
    """(host, port) of a ``--scheduler`` address: ``tcp://HOST:PORT`` or ``tcp://HOST`` (port
    8786), IPv6 hosts in brackets. Raises ValueError naming the address and the form."""
    given = _given(text)
    form = "give the address as tcp://HOST:PORT (the scheduler prints it at start, port 8786 by default)"
    scheme, sep, rest = text.strip().partition("://")
    if not sep:
        raise ValueError(f"--scheduler {given}: {form}")
    if scheme == "tls":
        raise ValueError(f"--scheduler {given}: tls:// needs the cluster's certificates, which this command does "
                         "not take; reach the scheduler over tcp:// (through an SSH tunnel for a remote cluster)")
    if scheme != "tcp":
        raise ValueError(f"--scheduler {given}: the {shown(scheme)} protocol is not supported; {form}")
    if rest.startswith("["):
        host, bracket, port_text = rest[1:].partition("]")
        if not bracket or (port_text and not port_text.startswith(":")):
            raise ValueError(f"--scheduler {given}: an IPv6 host is written [HOST]:PORT; {form}")
        port_text = port_text[1:]
    else:
        host, _, port_text = rest.rpartition(":") if ":" in rest else (rest, "", "")
        if ":" in host:
            raise ValueError(f"--scheduler {given}: write an IPv6 host in brackets, [HOST]:PORT; {form}")
    if not host or "/" in host or " " in host:
        raise ValueError(f"--scheduler {given}: no host name in it; {form}")
    if not port_text:
        return host, DEFAULT_SCHEDULER_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"--scheduler {given}: the port must be a number from 1 to 65535; {form}")
    return host, int(port_text)


def _given(text: str) -> str:
    """The address as typed, for a message (quoted and cut when long or unprintable)."""
    return text if len(text) <= 80 and text.isprintable() else shown(text)


def probe_scheduler(text: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Check that a Dask scheduler answers at ``text`` within ``timeout`` s, before Dask's own
    client is let near it: Dask waits on a silent port, and reads the first bytes of another
    service as the length of a message it then tries to allocate. A scheduler greets every
    connection with its handshake (an 8-byte length, then that many bytes of message frames).

    Raises:
        ValueError: one line naming the address and what was found there.
    """
    host, port = scheduler_address(text)
    fix = "start one with `dask scheduler` and give its tcp://HOST:8786 address"
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            head = _receive(sock, 8, deadline)
            if head is None:
                raise ValueError(f"--scheduler {_given(text)}: something accepts connections at {host}:{port} but "
                                 f"says nothing within {timeout:g} s: not a Dask scheduler; {fix}")
            length = struct.unpack("<Q", head)[0]
            body = _receive(sock, 16, deadline) if 16 <= length <= _MAX_HANDSHAKE_BYTES else None
            frames = struct.unpack("<Q", body[:8])[0] if body is not None else 0
            if body is None or not 1 <= frames <= 64:
                greeting = head + (body or b"") + _more(sock, 48, min(deadline, time.monotonic() + 0.2))
                raise ValueError(f"--scheduler {_given(text)}: the service at {host}:{port} is not a Dask scheduler "
                                 f"(it greets with {shown(greeting.decode('utf-8', 'replace'))}); {fix}")
    except OSError as exc:
        reason = "nothing answers" if isinstance(exc, (ConnectionRefusedError, TimeoutError, socket.timeout)) \
            else f"cannot reach {host}:{port} ({' '.join((exc.strerror or str(exc)).split())})"
        raise ValueError(f"--scheduler {_given(text)}: {reason} within {timeout:g} s; {fix}") from None


def _receive(sock: socket.socket, n: int, deadline: float) -> bytes | None:
    """``n`` bytes from ``sock`` before ``deadline`` (monotonic s), or None if they do not come."""
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(data))
        except (TimeoutError, socket.timeout):
            return None
        if not chunk:
            return None
        data += chunk
    return data


def _more(sock: socket.socket, n: int, deadline: float) -> bytes:
    """Up to ``n`` bytes more that arrive before ``deadline`` (for the message)."""
    data = b""
    while len(data) < n and time.monotonic() < deadline:
        sock.settimeout(max(1e-3, deadline - time.monotonic()))
        try:
            chunk = sock.recv(n - len(data))
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def available_memory() -> int | None:
    """Bytes of memory available to new processes (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def worker_cap(requested: int, pending: int, memory: int | None = None) -> tuple[int, str | None]:
    """How many local workers to start for ``requested`` (at most one per run left to fly, and
    as many as the available memory holds at WORKER_MEMORY_BYTES each), and why fewer, or None."""
    memory = available_memory() if memory is None else memory
    by_memory = max(1, memory // WORKER_MEMORY_BYTES) if memory is not None else requested
    n = max(1, min(requested, pending, by_memory))
    if n == requested:
        return n, None
    why = []
    if pending == n:
        why.append(f"{pending} runs left to fly")
    if by_memory == n and memory is not None:
        why.append(f"{memory / 2**30:.1f} GB of memory available at about {WORKER_MEMORY_BYTES / 2**20:.0f} MB "
                   "per worker")
    return n, "; ".join(why)


_QUIET_LIBRARIES = ("distributed", "tornado", "bokeh")


def quiet_library_logs() -> None:
    """Dask's, Tornado's and Bokeh's loggers to CRITICAL: the campaign speaks for itself (one
    line on Ctrl-C, its own report of a lost worker). Every logger of theirs that has a level
    of its own too, not only the package's: Dask's configuration sets ``tornado.application``
    to ERROR and ``distributed.client`` to WARNING, and a Ctrl-C that lands while a Dask call
    is starting has Dask 2026.8 log a NameError traceback from its own ``sync`` there."""
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.split(".")[0] in _QUIET_LIBRARIES and logger.level:
            logger.setLevel(logging.CRITICAL)
    for name in _QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def connect(scheduler: str | None, workers: int):
    """(client, cluster or None). Raises ValueError with one line when it cannot."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("campaigns run on Dask distributed, which is not installed: "
                         "pip install 'freeflyer_control[campaign]'") from None
    quiet_library_logs()
    if scheduler:
        probe_scheduler(scheduler)
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT_S), None
        except (OSError, TimeoutError, ValueError) as exc:
            reason = "nothing answers" if isinstance(exc, (OSError, TimeoutError)) else " ".join(str(exc).split())
            raise ValueError(f"--scheduler {_given(scheduler)}: {reason} within {CONNECT_TIMEOUT_S:g} s; start one "
                             "with `dask scheduler` and give its tcp://HOST:8786 address") from None
    # The workers start with SIGINT ignored (a child inherits it): Ctrl-C reaches every process
    # of the terminal's group, and is the client's to handle. The scheduler serves HTTP even
    # without its dashboard, on port 8787 unless told otherwise: a second campaign would then
    # report the port in use. Any free port, on the loopback, and no dashboard.
    with _sigint_ignored():
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                               silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored meanwhile (in the main thread; elsewhere nothing changes)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
    n_local, capped = worker_cap(workers or os.cpu_count() or 1, len(pending))
    if capped and workers and not scheduler:
        print(f"--workers {workers}: starting {n_local} ({capped})", file=sys.stderr)
    client, cluster = connect(scheduler, n_local)
    try:
        digest = spec.digest()
        # Every worker parses the spec (loads the robot) before the clock of the runs starts;
        # a worker that joins later does it in its first task.
        client.run(_warm, spec.raw, digest, spec.files)
        outcome.startup_s = time.perf_counter() - t_start
        n_workers = len(client.scheduler_info().get("workers", {})) or (workers or 1)
        outcome.workers = n_workers
        batches = split(spec, pending, n_workers)  # submitted in order: Dask runs them first in, first out
        outcome.tasks = len(batches)
        t0 = time.perf_counter()
        futures = [client.submit(fly_batch_raw, spec.raw, digest, b, spec.files, pure=False) for b in batches]
        runs_of = dict(zip(futures, batches))
        failed = sum(1 for r in journal.rows.values() if r.get("status") == "failed")
        for future in as_completed(futures):
            try:
                rows = future.result()
            except FilesChanged:
                raise
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
