"""A ``freeflyer sim`` run that stops early: Ctrl-C (SIGINT), a failed write, or an exception.

Either way the run leaves its partial ``timeseries.csv`` (streamed as it went) and a
``summary.json`` of what it recorded, marked ``"interrupted": true`` or with the ``"error"``
and the simulated time reached (``t_reached_s``). Ctrl-C ends the command with exit status 130
(128 + SIGINT, the shell's convention) and one line, no traceback; a write that fails (a full
disk) ends it with exit status 1 and one line; any other exception goes on to the command
line's usual handling (one line and exit status 2 for a bad input, a traceback for a bug)
after a line saying where the partial outputs are.

The summary must be written even when the streamed rows have filled the disk: the run keeps a
reserve file in its folder (:data:`RESERVE_BYTES`) and frees it just before the summary.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from freeflyer_control.cli.options import EXIT_INTERRUPTED, EXIT_WRITE_FAILED, write_failure
from freeflyer_control.sim.output import SUMMARY_JSON, TIMESERIES_CSV, json_safe, write_summary_json

EXIT_DIVERGED = 3
# Space kept for the summary: a summary.json is a few kB (tens with many mode switches or trips).
RESERVE_BYTES = 256 * 1024
RESERVE = ".freeflyer-summary-reserve"


def reserve_space(out: Path) -> None:
    """Keep RESERVE_BYTES in ``out`` for the summary (written, so the blocks are allocated);
    nothing if the disk is already too full for it (the run will say so when it writes)."""
    try:
        with open(out / RESERVE, "wb") as f:
            f.write(bytes(RESERVE_BYTES))
    except OSError:
        release_space(out)


def release_space(out: Path) -> None:
    """Free the reserve (before the summary is written)."""
    try:
        (out / RESERVE).unlink()
    except OSError:
        pass


def run_stoppable(out: Path, simulate, *, as_json: bool = False):
    """Run ``simulate(stream, progress)`` with ``timeseries.csv`` streamed into ``out`` and a
    progress bar (none with ``as_json``: stdout is the JSON and stderr stays quiet); Ctrl-C and
    errors are handled by :func:`report_stopped`.

    Returns ``(result, None)`` for a run that ended, ``(None, exit status)`` for one Ctrl-C stopped.
    """
    from freeflyer_control.sim.progress import ProgressBar
    from freeflyer_control.sim.stream import TimeseriesStream

    interrupt_on_sigint()
    reserve_space(out)
    stream = TimeseriesStream(out / TIMESERIES_CSV)
    progress = None if as_json else ProgressBar()
    try:
        return simulate(stream, progress), None
    except BaseException as exc:
        return None, report_stopped(stream, exc, out, progress, as_json=as_json)
    finally:
        _close(stream)
        release_space(out)


def _close(stream) -> None:
    """Close the stream; a write that fails now (the disk filled) was already, or will be, said."""
    try:
        stream.close()
    except OSError:
        pass


def diverged_status(summary: dict) -> int:
    """0, or 3 after one line on stderr when the run stopped on a fault: the plant diverged
    (``summary["plant_diverged"]``, the reason :class:`~freeflyer_control.physics.plant.PlantDiverged`
    gave) or the control law failed (``summary["law_fault"]``); the outputs hold the run up to
    there."""
    diverged = summary.get("plant_diverged") or summary.get("law_fault")
    if not diverged:
        return 0
    print(f"freeflyer sim: error: {diverged}; the simulation stopped there (exit status {EXIT_DIVERGED})",
          file=sys.stderr)
    return EXIT_DIVERGED


def interrupt_on_sigint() -> None:
    """Make SIGINT raise KeyboardInterrupt in this process, even if it was started with SIGINT
    ignored (a background job of a non-interactive shell is), so that ``kill -INT`` stops a run
    the way Ctrl-C does."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def report_stopped(stream, exc: BaseException, out: Path, progress=None, *, as_json: bool = False) -> int:
    """Write the summary of the run ``exc`` stopped (``stream.partial``), say so on stderr and
    return 130 for Ctrl-C; re-raise any other exception (after the same line).

    ``progress``: the progress bar, whose line is ended first on a terminal.
    """
    if getattr(progress, "tty", False) and getattr(progress, "shown", False):
        sys.stderr.write("\n")
    from freeflyer_control.sim.run_record import RUN_JSON, record_of, write_run_json
    from freeflyer_control.errors import interrupted_by_user

    interrupted = interrupted_by_user(exc)
    failure = write_failure(exc)
    result = stream.partial
    if result is None:  # stopped before its loop (loading, compiling), or stopped again while stopping
        if not (interrupted or failure):
            raise exc
        _close(stream)
        written = f"{TIMESERIES_CSV} ({stream.rows} rows) written, no summary" if stream.started else "no outputs written"
        why = "interrupted" if interrupted else f"error: {failure}"
        print(f"freeflyer sim: {why} before the run could be summarised; {written}", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted else EXIT_WRITE_FAILED
    _close(stream)  # every streamed row on disk before the summary that counts them
    release_space(out)
    s = result.summary
    try:
        write_summary_json(result, out / SUMMARY_JSON)
        write_run_json(record_of(result), out)  # what `freeflyer replay` needs to show the partial run
        summary = f", {SUMMARY_JSON}, {RUN_JSON}"
    except OSError as again:
        summary = f"; {SUMMARY_JSON} or {RUN_JSON} could not be written either ({again.strerror or again})"
    if failure:
        rows = f"{TIMESERIES_CSV} (cut short at about {stream.rows} rows)"
        print(f"freeflyer sim: error: {failure}; the run stopped at t = {s['t_reached_s']:.2f} s of "
              f"{s['duration_s']:g} s; partial outputs in {out.resolve()}/: {rows}{summary}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    why = "interrupted" if interrupted else "stopped by an error"
    print(f"freeflyer sim: {why} at t = {s['t_reached_s']:.2f} s of {s['duration_s']:g} s; partial outputs "
          f"in {out.resolve()}/: {TIMESERIES_CSV} ({stream.rows} rows){summary}", file=sys.stderr)
    if not interrupted:
        raise exc
    if as_json:
        print(json.dumps(json_safe(s), indent=2))
    return EXIT_INTERRUPTED
