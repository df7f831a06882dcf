"""``freeflyer sim --object ...`` stops like a plain ``freeflyer sim`` run.

Held-object maneuvers (sim.cooperative) and captures (sim.capture) stream ``timeseries.csv`` as
they go, stop on a real SIGINT with exit status 130 and partial outputs marked interrupted, leave
partial outputs with the error on a crash, and end with exit status 3 and one line when the
plant diverges. The machinery is cli/stopping.py's and sim/stream.py's, shared with plain runs.
"""

from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest

from freeflyer_control.cli.main import main
from test_sim_stops import Boom, crash_on_call, interrupt_once_writing

ROOT = Path(__file__).resolve().parents[1]
OBJECT_RUN = ["sim", "--robot", "dual_arm_planar", "--object", "planar_box", "--no-plots"]
TRANSPORT = [*OBJECT_RUN, "--maneuver", "object-transport"]
CAPTURE = [*OBJECT_RUN, "--maneuver", "capture"]
# Long enough that the run is still going when the signal comes (the closed-chain plant runs
# near real time), logged at 10 Hz to stay small.
LONG, LOG_RATE = "3000", "10"


def start_object_sim(out: Path):
    import os
    import subprocess
    import sys

    argv = [sys.executable, "-m", "freeflyer_control.cli.main", *TRANSPORT, "--duration", LONG,
            "--log-rate", LOG_RATE, "--out", str(out)]
    return subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def read_partial(out: Path, *, interrupted: bool, duration: float) -> tuple[list[list[float]], dict]:
    """The partial outputs, checked: every row whole and numeric, times increasing, the summary
    saying why the run stopped and reaching at least the last row's time."""
    with open(out / "timeseries.csv", newline="") as f:
        header, *rows = list(csv.reader(f))
    assert rows, "no rows"
    assert header[0] == "t" and "mode" not in header  # object runs log no control mode
    assert all(len(row) == len(header) for row in rows), "a row was cut short"
    values = [[float(x) for x in row] for row in rows]
    t = [row[0] for row in values]
    assert all(b > a for a, b in zip(t, t[1:]))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is interrupted
    assert (summary["error"] is None) is interrupted
    assert summary["t_reached_s"] >= t[-1] - 1e-9
    assert summary["duration_s"] == duration
    return values, summary


def capture_plant_class():
    """The class whose ``step`` a capture's plants take: the compiled plant's where numba is
    installed (physics.kernels.plant.make_plant), else the Python one's."""
    from freeflyer_control.physics.kernels import available

    if available():
        from freeflyer_control.physics.kernels.plant import CompiledPlant
        return CompiledPlant
    from freeflyer_control.physics.plant import Plant
    return Plant


def diverge_on_call(monkeypatch, plant_class, after: int, reason: str) -> None:
    """Make ``plant_class.step`` raise PlantDiverged(reason) from its ``after``-th call on."""
    from freeflyer_control.physics.plant import PlantDiverged

    real = plant_class.step
    calls = {"n": 0}

    def diverging(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] >= after:
            raise PlantDiverged(reason, 0.0)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(plant_class, "step", diverging)


def test_sigint_stops_an_object_transport_with_130_no_traceback_and_usable_partial_outputs(tmp_path):
    proc = start_object_sim(tmp_path)
    _, err, _ = interrupt_once_writing(proc, tmp_path / "timeseries.csv")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "freeflyer sim: interrupted at t = " in err and "partial outputs in" in err
    rows, summary = read_partial(tmp_path, interrupted=True, duration=float(LONG))
    assert summary["maneuver"] == "object-transport"
    assert summary["object_rms_tracking_error_m"] is not None  # figures of the rows recorded


def test_a_crash_inside_an_object_transport_leaves_partial_outputs_with_the_error(tmp_path, monkeypatch, capsys):
    from freeflyer_control.physics.closed_chain import ClosedChainPlant

    crash_on_call(monkeypatch, ClosedChainPlant, "step", 300)
    with pytest.raises(Boom):  # a bug keeps its traceback
        main([*TRANSPORT, "--duration", "5", "--out", str(tmp_path)])
    assert "freeflyer sim: stopped by an error at t = " in capsys.readouterr().err
    _, summary = read_partial(tmp_path, interrupted=False, duration=5.0)
    assert summary["error"] == "Boom: injected failure"
    # 299 steps at the default 250 Hz were taken before the failing one.
    assert summary["t_reached_s"] == pytest.approx(299 / 250.0)


def test_a_crash_inside_a_capture_leaves_partial_outputs_with_the_error(tmp_path, monkeypatch, capsys):
    # The approach steps the robot's and the object's plants: 2 calls a tick.
    crash_on_call(monkeypatch, capture_plant_class(), "step", 400)
    with pytest.raises(Boom):
        main([*CAPTURE, "--duration", "8", "--out", str(tmp_path)])
    assert "freeflyer sim: stopped by an error at t = " in capsys.readouterr().err
    _, summary = read_partial(tmp_path, interrupted=False, duration=8.0)
    assert summary["error"] == "Boom: injected failure"


def test_a_diverging_closed_chain_plant_ends_the_run_with_3_one_line_and_the_outputs_so_far(
        tmp_path, monkeypatch, capsys):
    from freeflyer_control.physics.closed_chain import ClosedChainPlant

    diverge_on_call(monkeypatch, ClosedChainPlant, 200, "the plant diverged at t = 0.398 s (test)")
    rc = main([*TRANSPORT, "--duration", "2", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 3
    assert err.strip().splitlines()[-1] == ("freeflyer sim: error: the plant diverged at t = 0.398 s (test); "
                                            "the simulation stopped there (exit status 3)")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["plant_diverged"] == "the plant diverged at t = 0.398 s (test)"
    assert summary["t_reached_s"] == pytest.approx(199 / 250.0)
    with open(tmp_path / "timeseries.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert float(rows[-1][0]) <= summary["t_reached_s"] + 1e-9


@pytest.mark.parametrize("argv", [TRANSPORT, CAPTURE], ids=["object-transport", "capture"])
def test_the_streamed_timeseries_is_the_file_written_after_the_run(tmp_path, argv):
    """The CSV streamed during a run is byte for byte what sim.output writes from the result."""
    from freeflyer_control.cli.sim_object import _capture_config, _config
    from freeflyer_control.cli.main import build_parser
    from freeflyer_control.sim.capture import run_capture
    from freeflyer_control.sim.cooperative import run_object_simulation
    from freeflyer_control.sim.output import write_timeseries_csv

    run = [*argv, "--duration", "1", "--out", str(tmp_path / "streamed")]
    assert main(run) == (1 if argv is CAPTURE else 0)  # a 1 s capture never closes the grasp: exit 1
    args = build_parser().parse_args(run)
    result = (run_capture(_capture_config(args)) if "capture" in argv
              else run_object_simulation(_config(args)))
    written = write_timeseries_csv(result, tmp_path / "written.csv")
    streamed = (tmp_path / "streamed" / "timeseries.csv").read_bytes()
    assert streamed == written.read_bytes()
    assert streamed.count(b"\n") == len(result.series["t"]) + 1


def test_a_diverging_plant_ends_a_capture_with_3_and_the_reason_in_the_summary(tmp_path, monkeypatch, capsys):
    diverge_on_call(monkeypatch, capture_plant_class(), 100, "the plant diverged (test)")
    rc = main([*CAPTURE, "--duration", "2", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 3  # the divergence wins over the grasp never closing (exit 1)
    assert "the grasp never closed" not in err
    assert err.strip().splitlines()[-1] == ("freeflyer sim: error: the plant diverged (test); "
                                            "the simulation stopped there (exit status 3)")
    assert json.loads((tmp_path / "summary.json").read_text())["plant_diverged"] == "the plant diverged (test)"
