"""Files of a simulation run: ``timeseries.csv``, ``summary.json`` and, optionally, ``run.mcap``.

``timeseries.csv``
    One row per log sample. Column ``t`` (s) first, then ``<series>.<label>`` for every column of
    every series of :class:`~freeflyer_control.sim.result.SimResult` in recording order
    (``joint_positions.joint1``, ``momentum_total.Px``, ...; series with no columns, e.g. the wheel
    torques of a robot without wheels, have none), then ``mode``: the maneuvering mode's name
    (the ``mode.mode_index`` column holds its index into ``list(Mode)``). Floats are written with
    ``repr`` (the shortest text that reads back to the same double), so a momentum of 1e-16 kg m/s
    survives; missing values (e.g. targets of a joint-space maneuver) are ``nan``. Units are SI:
    rad, rad/s, m, m/s, N, N m, kg m/s, kg m^2/s. ``freeflyer sim`` writes it as the run goes
    (:mod:`freeflyer_control.sim.stream`): a run stopped early leaves every row up to where it
    stopped.

``summary.json``
    :attr:`SimResult.summary`, indent 2. numpy scalars and arrays become numbers and lists;
    non-finite numbers (an infinite real-time factor) become ``null`` so the file is strict JSON.
    ``interrupted`` (Ctrl-C), ``error`` (``"<type>: <message>"`` of an exception that stopped the
    run, else null) and ``t_reached_s`` (simulated s reached) say whether the run is complete; a
    figure whose signals were missing is ``null`` and ``not_available`` maps it to the reason.

``run.json``
    What was flown, so that the model can be rebuilt (:mod:`freeflyer_control.sim.run_record`).

``run.mcap``
    The run as ROS 2 messages (/robot_description, /tf, /joint_states, ...), written from the
    folder's records when the ``mcap`` extra is installed: :mod:`freeflyer_control.sim.run_mcap`.
"""

from __future__ import annotations

import json
import logging
import math
import os
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from freeflyer_control.sim.stream import TimeseriesStream

log = logging.getLogger(__name__)

TIMESERIES_CSV = "timeseries.csv"
SUMMARY_JSON = "summary.json"
RUN_MCAP = "run.mcap"
# Every file this module may write (with the temporary files of an interrupted write).
OUTPUT_FILES = (TIMESERIES_CSV, SUMMARY_JSON, RUN_MCAP, SUMMARY_JSON + ".part", RUN_MCAP + ".part")


# --------------------------------------------------------------------------------------------
# helpers


def json_safe(value: Any) -> Any:
    """``value`` with numpy types, enums, paths and tuples made JSON-serialisable.

    Non-finite floats become None (strict JSON has no NaN or Infinity).
    """
    if isinstance(value, dict):
        return {str(json_safe(k)) if not isinstance(k, str) else k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, Enum):
        return json_safe(value.value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def write_timeseries_csv(result, path: Path) -> Path:
    """``timeseries.csv`` (see the module docstring), through the same writer that streams it
    during a run (:class:`~freeflyer_control.sim.stream.TimeseriesStream`)."""
    series = result.series
    n = len(series["t"])
    columns = {}
    for key, values in series.items():
        width = np.asarray(values, dtype=float).reshape(n, -1).shape[1]
        labels = list(result.column_names.get(key, []))
        columns[key] = labels if len(labels) == width else [str(i) for i in range(width)]
    stream = TimeseriesStream(path)
    try:
        stream.begin(columns)
        stream.write(series)
    finally:
        stream.close()
    return path


def write_summary_json(result, path: Path) -> Path:
    """``summary.json`` (see the module docstring). Written to a temporary file first and then
    renamed, so that a run stopped while writing it never leaves half a summary."""
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(json_safe(result.summary), f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
