"""``timeseries.csv`` written as a run goes, so that a run that stops early leaves what it did.

The engines (:func:`~freeflyer_control.sim.runner.run_simulation` on the Python and the compiled
path, :func:`~freeflyer_control.hil.sim.run_via_testbed`) hand every recorded sample, or a block
of samples, to a :class:`TimeseriesStream`, which appends the rows to the file and flushes them
to the operating system at least every ``flush_interval`` s of wall time: a run that is killed
loses at most about that much of its rows; one that stops by Ctrl-C or an exception loses none.

When a run stops early (``KeyboardInterrupt``, or an exception inside its loop), the engine
stores what it recorded in :attr:`TimeseriesStream.partial`, its summary saying why
(:func:`stop_fields`), and lets the exception go on; the caller writes that summary.

The file's format is :mod:`freeflyer_control.sim.output`'s (its module docstring), and
:func:`~freeflyer_control.sim.output.write_timeseries_csv` writes it through this class, so a
streamed file and one written after the run are the same bytes.
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from freeflyer_control.errors import interrupted_by_user
from freeflyer_control.physics.modes import Mode

log = logging.getLogger(__name__)

# A killed run loses at most about this much wall time of rows; flushing more often costs a
# system call per flush and gains nothing a user would notice.
FLUSH_INTERVAL_S = 1.0
_MODE_NAMES = [m.value for m in Mode]


class TimeseriesStream:
    """Rows of ``timeseries.csv`` appended as they are recorded.

    Args:
        path: the file (created or truncated by :meth:`begin`).
        flush_interval: s of wall time between flushes to the operating system.

    Attributes:
        rows: data rows written so far.
        partial: the result of a run that stopped early (set by the engine), else None.
    """

    def __init__(self, path, flush_interval: float = FLUSH_INTERVAL_S):
        self.path = Path(path)
        self.flush_interval = float(flush_interval)
        self.rows = 0
        self.partial = None
        self._file = None
        self._keys: list[str] = []
        self._widths: list[int] = []
        self._mode_col = 0
        self._last_flush = 0.0

    @property
    def started(self) -> bool:
        return self._file is not None

    def begin(self, columns: Mapping[str, Sequence[str]]) -> None:
        """Open the file and write the header: ``t``, then ``<series>.<label>`` for every column
        of every other series in ``columns``' order (``mode.mode_index`` among them), then ``mode``
        when there is a ``mode`` series (the runs of a held object have no control mode switches
        to log, and no ``mode`` column)."""
        if "t" not in columns:
            raise ValueError("a time series needs the series 't'")
        self._keys = ["t"] + [key for key in columns if key != "t"]
        self._widths = [len(columns[key]) for key in self._keys]
        has_mode = "mode" in columns
        self._mode_col = sum(self._widths[:self._keys.index("mode")]) if has_mode else None
        header = ["t"] + [f"{key}.{label}" for key in self._keys[1:] for label in columns[key]] + ["mode"] * has_mode
        self._file = open(self.path, "w", newline="", encoding="utf-8")
        with self._naming_the_file():
            csv.writer(self._file).writerow(header)
            self._file.flush()
        self._last_flush = time.perf_counter()

    @contextmanager
    def _naming_the_file(self):
        """A failed write (a full disk) raised as an OSError that names this file."""
        try:
            yield
        except OSError as exc:
            if exc.filename is not None or exc.errno is None:
                raise
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    def write(self, samples: Mapping[str, np.ndarray]) -> None:
        """Append rows: ``samples[key]`` is one sample (shape (k,)) or a block (shape (n, k)) of
        every series given to :meth:`begin`, in any order."""
        blocks = [np.asarray(samples[key], dtype=float) for key in self._keys]
        n = blocks[0].size  # one t per row
        table = np.empty((n, sum(self._widths)))
        col = 0
        for block, width in zip(blocks, self._widths):
            table[:, col:col + width] = block.reshape(n, width)
            col += width
        # repr: the shortest text that reads back to the same double (the csv module writes the
        # same text for a float). One write per block: Ctrl-C raises between Python operations,
        # so it never leaves part of a block in the file (a kill -9 can cut the last row).
        if self._mode_col is None:
            text = "".join(",".join(map(repr, values)) + "\r\n" for values in table.tolist())
        else:
            modes = table[:, self._mode_col].tolist()
            text = "".join(",".join(map(repr, values)) + "," + _MODE_NAMES[int(mode)] + "\r\n"
                           for values, mode in zip(table.tolist(), modes))
        with self._naming_the_file():
            self._file.write(text)
            self.rows += n
            now = time.perf_counter()
            if now - self._last_flush >= self.flush_interval:
                self._file.flush()
                self._last_flush = now

    def close(self) -> None:
        """Flush and close the file (a stream never begun writes nothing)."""
        if self._file is not None and not self._file.closed:
            with self._naming_the_file():
                self._file.close()


def stop_fields(exc: BaseException, t_reached: float) -> dict:
    """The summary entries of a run stopped early by ``exc``: ``interrupted`` (Ctrl-C),
    ``error`` (``"<type>: <message>"`` of any other exception), ``t_reached_s`` (simulated s)."""
    interrupted = interrupted_by_user(exc)
    return {
        "interrupted": interrupted,
        "error": None if interrupted else f"{type(exc).__name__}: {exc}",
        "t_reached_s": float(t_reached),
    }


@contextmanager
def keeps_partial(stream: TimeseriesStream | None, partial: Callable[[BaseException], object]):
    """Around a run's loop: if the loop stops with an exception (Ctrl-C included), store
    ``partial(exc)`` (a SimResult of what was recorded, its summary with :func:`stop_fields`) in
    ``stream.partial`` and let the exception go on. Making the partial result never hides the
    exception that stopped the run: if it fails too, that is logged and the run's error stands."""
    try:
        yield
    except BaseException as exc:
        if stream is not None:
            try:
                stream.partial = partial(exc)
            except Exception as err:  # noqa: BLE001 - the run's own exception must win
                log.warning("the summary of the stopped run could not be made: %s: %s",
                            type(err).__name__, err)
        raise
