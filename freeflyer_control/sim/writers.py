"""Everything a finished run's folder gets, in order: the records, then what is written from them.

:func:`write_outputs` writes ``timeseries.csv`` and ``summary.json`` (:mod:`.output`) and
``run.json`` (:mod:`.run_record`), then, from the folder's records, ``run.mcap`` (:mod:`.run_mcap`)
and ``replay.html`` (:mod:`.replay`). It sits above those modules: they never import it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from freeflyer_control.sim.output import RUN_MCAP, SUMMARY_JSON, TIMESERIES_CSV, write_summary_json, write_timeseries_csv
from freeflyer_control.sim.run_record import read_run, record_of, write_run_json

log = logging.getLogger(__name__)


def write_outputs(result, out_dir, *, mcap: bool = True, timeseries: bool = True,
                  replay: bool = False) -> dict[str, Path]:
    """Write the files of ``result`` into ``out_dir`` (created if missing).

    Returns {"timeseries": csv path, "summary": json path, "run": run.json path[, "mcap": mcap
    path][, "replay": replay.html path]}; ``mcap`` is present only if it was written (``mcap=True``
    and the ``mcap`` / ``mcap_ros2`` modules importable; otherwise an info line is logged), and
    ``replay`` when asked for (the caller checks first that the viewer is installed:
    :func:`freeflyer_control.sim.replay.replay_missing`). ``timeseries=False``: the CSV was
    streamed during the run (:mod:`freeflyer_control.sim.stream`) and is not written again.
    The MCAP and the replay are written from the folder's records, like any finished run's.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "timeseries": write_timeseries_csv(result, out / TIMESERIES_CSV) if timeseries else out / TIMESERIES_CSV,
        "summary": write_summary_json(result, out / SUMMARY_JSON),
        "run": write_run_json(record_of(result), out),
    }
    if mcap:
        from freeflyer_control.sim.run_mcap import mcap_available, write_mcap

        if mcap_available():
            paths["mcap"] = write_mcap(read_run(out), out / RUN_MCAP)
        else:
            log.info("%s not written: the 'mcap' and 'mcap_ros2' modules are not installed "
                     "(pip install mcap mcap-ros2-support)", RUN_MCAP)
    if replay:
        from freeflyer_control.sim.replay import write_replay

        paths["replay"] = write_replay(out)
    return paths
