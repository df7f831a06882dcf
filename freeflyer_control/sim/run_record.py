"""A finished run's own records, read back: ``run.json``, ``timeseries.csv``, ``summary.json``.

The writers of a finished run (``replay.html``, ``run.mcap``, a campaign's ``report.html``) read
what a run folder holds and never simulate again. ``timeseries.csv`` and ``summary.json`` are
:mod:`freeflyer_control.sim.output`'s; ``run.json`` (written beside them by
:func:`write_run_json`) says what was flown, so the model can be rebuilt::

    {"format": 1,
     "kind": "sim" | "object" | "capture",
     "robot": {"source": "planar_4link" | "/abs/robot.yaml" | "/abs/robot.urdf",
               "base": null | "planar" | "spatial", "end_effectors": null | [...], "name": "..."},
     "object": null | {"source": "planar_box" | "/abs/object.yaml", "free": false},
     "thrusters": [{"name", "position" (m, base_link), "direction" (unit, base_link), "max_force" (N)}],
     "testbed": null | "planar_4link" | "/abs/testbed.yaml",
     "options": {...the run's configuration, JSON-safe...}}

``thrusters`` is the layout as flown (a testbed config may replace the robot config's).
Relative paths are made absolute when written, so a run folder can be replayed from anywhere.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from freeflyer_control.errors import FreeFlyerError
from freeflyer_control.sim.output import SUMMARY_JSON, TIMESERIES_CSV, json_safe

RUN_JSON = "run.json"
FORMAT = 1
KINDS = ("sim", "object", "capture")


class RunRecordError(FreeFlyerError):
    """A run folder that cannot be read back; the message names the file and the fix."""


def source_of(spec) -> str | None:
    """How a robot / object / testbed was named on the command line, made position independent:
    an existing file path becomes absolute, a bundled name stays a name."""
    if spec is None:
        return None
    text = str(spec)
    if text.lstrip().startswith("<"):  # URDF text itself: not a name; keep it whole
        return text
    path = Path(text)
    if path.suffix in (".yaml", ".yml", ".urdf", ".xml") and path.exists():
        return str(path.resolve())
    return text


def thruster_layout(ff) -> list[dict]:
    """The robot's thrusters as run.json lists them (base_link frame, SI)."""
    return [{"name": t.name, "position": [float(x) for x in t.position],
             "direction": [float(x) for x in t.direction], "max_force": float(t.max_force)}
            for t in ff.thrusters]


def run_json(kind: str, ff, *, robot, base=None, end_effectors=None, obj=None, free: bool = False,
             testbed=None, options=None) -> dict:
    """The content of run.json (see the module docstring) for a run of ``kind`` flown by ``ff``
    (the plant's model, whose thrusters are the ones flown)."""
    if kind not in KINDS:
        raise ValueError(f"run kind {kind!r}: one of {KINDS}")
    if dataclasses.is_dataclass(options):
        options = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
                   if f.name != "perturbation"}
    return {
        "format": FORMAT,
        "kind": kind,
        "robot": {"source": source_of(robot), "base": base,
                  "end_effectors": list(end_effectors) if end_effectors else None,
                  "name": getattr(ff, "name", "")},
        "object": None if obj is None else {"source": source_of(obj), "free": bool(free)},
        "thrusters": thruster_layout(ff),
        "testbed": source_of(testbed),
        "options": json_safe(options or {}),
    }


def record_of(result) -> dict:
    """run.json's content for a finished run's result (a SimResult or an ObjectSimResult: its
    ``config`` says the kind, ``robot`` is the plant's model)."""
    config = result.config
    kind = getattr(config, "RUN_KIND", "sim")
    if kind == "sim":
        return run_json(kind, result.robot, robot=config.robot, base=config.base, end_effectors=config.ee,
                        testbed=result.summary.get("testbed"), options=config)
    return run_json(kind, result.robot, robot=config.robot, obj=config.obj, free=kind == "capture", options=config)


def write_run_json(record: dict, out_dir) -> Path:
    path = Path(out_dir) / RUN_JSON
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


@dataclass
class RunRecords:
    """A run folder read back.

    Attributes:
        folder: where it was read.
        run: run.json's content.
        summary: summary.json's content ({} if absent).
        series: name -> (n, k) float array, as the run recorded them (``t`` is (n, 1)).
        columns: name -> column labels.
        modes: the mode name of every sample (empty if the run has no ``mode`` column).
    """

    folder: Path
    run: dict
    summary: dict
    series: dict[str, np.ndarray]
    columns: dict[str, list[str]]
    modes: list[str]

    @property
    def t(self) -> np.ndarray:
        return self.series["t"][:, 0]

    def get(self, name: str) -> np.ndarray | None:
        """The series ``name`` or None when the run did not record it (or recorded no columns)."""
        values = self.series.get(name)
        return values if values is not None and values.shape[1] else None

    def column(self, name: str, label: str) -> np.ndarray:
        return self.series[name][:, self.columns[name].index(label)]

    def load_robot(self):
        """The plant's robot model, rebuilt from run.json (kinematics and visuals; the
        thrusters as flown are in ``run["thrusters"]``)."""
        from freeflyer_control.model import load_robot

        robot = self.run["robot"]
        return load_robot(robot["source"], base=robot.get("base"), end_effectors=robot.get("end_effectors"))

    def load_object(self):
        """The object config, or None for a run without an object."""
        if not self.run.get("object"):
            return None
        from freeflyer_control.model.objects import load_object

        return load_object(self.run["object"]["source"])


def read_timeseries(path: Path) -> tuple[dict[str, np.ndarray], dict[str, list[str]], list[str]]:
    """timeseries.csv -> (series, column labels, mode names); its format is sim.output's."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise RunRecordError(f"{path} is empty: the run stopped before writing its header") from None
        rows = [row for row in reader if len(row) == len(header)]  # a killed run may leave half a row
    has_mode = header[-1] == "mode"
    names = header[:-1] if has_mode else header
    columns: dict[str, list[str]] = {}
    index: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        key, _, label = name.partition(".") if name != "t" else ("t", "", "t")
        columns.setdefault(key, []).append(label)
        index.setdefault(key, []).append(i)
    data = np.array([[_number(x) for x in row[:len(names)]] for row in rows], dtype=float).reshape(len(rows), len(names))
    series = {key: data[:, idx] for key, idx in index.items()}
    modes = [row[-1] for row in rows] if has_mode else []
    return series, columns, modes


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def read_run(folder) -> RunRecords:
    """Read the records of the run in ``folder``.

    Raises:
        RunRecordError: the folder, its run.json or its timeseries.csv is missing or unreadable.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise RunRecordError(f"{folder} is not a folder: give the --out folder of a freeflyer sim run")
    run_path, csv_path = folder / RUN_JSON, folder / TIMESERIES_CSV
    for path in (run_path, csv_path):
        if not path.is_file():
            raise RunRecordError(f"{folder} has no {path.name}: give the --out folder of a freeflyer sim run "
                                 "(runs written before run.json existed: fly them again)")
    try:
        run = json.loads(run_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunRecordError(f"{run_path}: cannot read it ({exc})") from None
    if not isinstance(run, dict) or run.get("format") != FORMAT or run.get("kind") not in KINDS:
        raise RunRecordError(f"{run_path}: not a run.json of format {FORMAT} (kind one of {KINDS})")
    summary_path = folder / SUMMARY_JSON
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
    series, columns, modes = read_timeseries(csv_path)
    if "t" not in series:
        raise RunRecordError(f"{csv_path} has no 't' column")
    return RunRecords(folder, run, summary, series, columns, modes)
