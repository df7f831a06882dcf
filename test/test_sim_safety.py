"""freeflyer sim and the command line, against issue 20's probes (classes 6, 9, 10, 11, 16, 19).

Each test names the class it holds: torques reported as applied (and, labelled, as commanded),
the emulated testbed's run size, a full disk, matplotlib missing, options a run would ignore,
negative values, empty values, long names, frames fixed to the world, warnings said once.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from freeflyer_control.cli.main import main, parse
from freeflyer_control.resources import share_dir
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation

SHARE = share_dir()


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def refused(*argv: str) -> str:
    """The one line ``freeflyer argv`` is refused with (exit status 2, nothing run)."""
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stdout(io.StringIO()):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            parse(list(argv))
    assert exc.value.code == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# --- class 6: what was applied, and what was commanded, labelled so ------------------------------

def test_an_impedance_press_reports_the_torques_applied_and_the_commanded_ones_apart():
    # The probe: impedance on ee-contact commanded torques far beyond planar_4link's
    # 3 N m joints. The plant applied at most 3 N m; the log must say so, and keep the command.
    result = run_simulation(SimConfig(controller="impedance", maneuver="ee-contact"), fast=False)
    s, series, limits = result.summary, result.series, result.robot.arm_effort_limits
    assert np.all(np.abs(series["arm_torques"]) <= limits + 1e-12)  # clipped exactly at the limit
    assert s["max_abs_arm_torque_nm"] <= limits.max()
    assert s["max_abs_arm_torque_commanded_nm"] > limits.max()
    clipped = np.abs(series["arm_torques_commanded"]) > limits
    assert np.array_equal(series["arm_torques"][clipped], np.sign(series["arm_torques_commanded"][clipped])
                          * np.broadcast_to(limits, clipped.shape)[clipped])
    # Every sample with a clipped arm torque counts as saturated (the wheels may add more).
    assert np.mean(clipped.any(axis=1)) <= s["saturated_fraction"] < 1.0


def test_a_thruster_run_reports_the_wrench_the_thrusters_put_on_the_base():
    # Flying with thrusters: the applied base wrench is the thrusters' (B f in world axes); where
    # the allocation is feasible it equals the commanded wrench to round-off (1e-9 N, N m).
    result = run_simulation(SimConfig(mode="flying", duration=2.0, rate=100.0), fast=False)
    s = result.series
    feasible = ~np.any(np.abs(s["base_wrench_world"] - s["base_wrench_commanded"]) > 1e-6, axis=1)
    assert feasible.mean() > 0.5
    assert np.allclose(s["base_wrench_world"][feasible], s["base_wrench_commanded"][feasible], atol=1e-9)
    assert np.all(s["thruster_forces"] >= 0.0)


# --- class 9: the emulated testbed's run size -----------------------------------------------------

def make_testbed(tmp_path: Path, **emulator) -> Path:
    data = yaml.safe_load((SHARE / "config" / "testbeds" / "planar_4link.yaml").read_text())
    data["robot"] = str(SHARE / "config" / "robots" / "planar_4link.yaml")
    data["emulator"] = emulator
    path = tmp_path / "testbed.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_emulator_plant_rate_beyond_freeflyer_sims_limit_is_refused(tmp_path):
    line = refused("sim", "--via-testbed", str(make_testbed(tmp_path, plant_rate=1.0e9)), "--duration", "0.3")
    assert "emulator.plant_rate must be a number in [1, 100000] Hz (the run-size limit of freeflyer sim" in line


def test_an_emulated_run_of_too_many_plant_steps_is_refused_before_it_runs(tmp_path):
    line = refused("sim", "--via-testbed", str(make_testbed(tmp_path, plant_rate=1.0e5)), "--duration", "1500",
                   "--log-rate", "1")
    assert ("--duration 1500 s through the emulated testbed at its emulator.plant_rate 100000 Hz is 1.5e+08 plant "
            "steps, above the limit of 1e+08") in line


# --- class 10: a full disk -----------------------------------------------------------------------

def _file_size_limit(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_write_that_fails_mid_run_ends_in_one_line_and_the_run_keeps_its_summary(tmp_path):
    # A file-size limit makes the streamed timeseries.csv fail part-way, as a full disk does
    # (EFBIG instead of ENOSPC); the summary (a few kB) and the reserve (256 kB) fit under it.
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "freeflyer_control.cli.main", "sim", "--engine", "python",
                           "--duration", "6", "--log-rate", "250", "--no-plots", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, preexec_fn=_file_size_limit(400_000))
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("\r")]
    last = lines[-1].split("\r")[-1]
    assert "Traceback" not in proc.stderr
    assert last.startswith(f"freeflyer sim: error: cannot write {out / 'timeseries.csv'}: File too large; the run "
                           "stopped at t = "), last
    summary = json.loads((out / "summary.json").read_text())
    assert summary["error"].startswith("OSError: [Errno 27] File too large") and summary["t_reached_s"] < 6.0
    assert not (out / ".freeflyer-summary-reserve").exists()


def test_a_full_disk_at_the_first_row_is_one_line(tmp_path):
    # /dev/full: every write fails with ENOSPC, the first one (the header) included.
    out = tmp_path / "out"
    out.mkdir()
    (out / "timeseries.csv").symlink_to("/dev/full")
    code, _, err = run_cli("sim", "--duration", "0.1", "--no-plots", "--out", str(out))
    assert code == 1
    assert err.splitlines()[-1] == (f"freeflyer sim: error: cannot write {out / 'timeseries.csv'}: No space left on "
                                    "device before the run could be summarised; timeseries.csv (0 rows) written, no summary")


# --- class 11: matplotlib missing, said before the work ---------------------------------------

@pytest.fixture
def no_matplotlib(monkeypatch):
    monkeypatch.setattr("freeflyer_control.sim.plots.matplotlib_missing", lambda: "No module named 'matplotlib'")


def test_workspace_map_and_plan_plot_refuse_a_missing_matplotlib_up_front(no_matplotlib, tmp_path):
    line = refused("workspace", "--map", str(tmp_path / "w.png"))
    assert line.startswith("freeflyer workspace: error: --map draws with matplotlib, which is not installed")
    line = refused("plan", "lyapunov", "--theta-target", "0.1", "--q-target", "[0.1, 0.2, 0.3, 0.4]", "--plot",
                   str(tmp_path / "p.png"))
    assert "--plot draws with matplotlib, which is not installed" in line


def test_a_campaign_without_matplotlib_says_so_before_it_runs_and_skips_the_plots(no_matplotlib, tmp_path):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'freeflyer_control[campaign]')")
    spec = tmp_path / "spec.yaml"
    spec.write_text("runs: 2\nmaneuver: wilde\nduration: 0.2\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        args = parse(["campaign", str(spec), "--out", str(tmp_path / "out")])
    assert args.no_plots
    assert err.getvalue().startswith("freeflyer campaign: warning: matplotlib is not installed, so no plots")


# --- class 16: options a run would ignore -------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["--campaign", "SPEC", "--run", "1", "--engine", "compiled", "--robot", "spatial_6link"],
     "--robot, --engine are not used by --campaign (the spec sets everything about the run): drop them"),
    (["--object", "planar_box", "--robot", "dual_arm_planar", "--maneuver", "object-transport", "--controller",
      "impedance"], "--controller is not used by --object runs"),
    (["--object", "planar_box", "--robot", "dual_arm_planar", "--maneuver", "object-transport", "--engine",
      "compiled"], "--engine is not used by --object runs"),
    (["--via-testbed", "--rate", "100"], "--rate is not used by --via-testbed runs"),
    (["--internal-force", "3"], "--internal-force is not used by this run"),
    (["--seed", "4"], "--seed seeds the --mass-error draw; without --mass-error there is nothing to seed"),
])
def test_an_option_the_run_would_ignore_is_refused(argv, words, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("runs: 3\nmaneuver: wilde\nduration: 0.2\n")
    line = refused("sim", *[str(spec) if a == "SPEC" else a for a in argv])
    assert words in line, line


# --- class 17: validation before anything runs --------------------------------------------------

def test_a_fault_on_a_joint_the_testbed_robot_lacks_is_refused_before_any_output(tmp_path):
    line = refused("sim", "--via-testbed", "--fault", "encoder_nan:0:0.1:nojoint", "--out", str(tmp_path / "o"))
    assert "'nojoint' is not a joint of robot 'planar_4link'; did you mean" in line
    assert not (tmp_path / "o").exists()


# --- class 18: a wall that is no wall -------------------------------------------------------------

def test_a_wall_mass_of_1e_300_is_refused_with_the_reason_and_no_advice_about_the_rate():
    line = refused("sim", "--maneuver", "ee-contact", "--wall-mass", "1e-300")
    assert "argument --wall-mass: give a number in [0.001, 1e+06] kg (a gram to a thousand tonnes" in line
    assert "rate" not in line


# --- class 19 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["sim", "--duration", "-inf"], "argument --duration: give a number in (0, inf) s, got '-inf'"),
    (["sim", "--rate", "-1e3"], "argument --rate: give a number in [1, 100000] Hz, got '-1e3'"),
    (["gjm", "--sigma-warn", "-.5"], "argument --sigma-warn:"),
])
def test_negative_numbers_are_values_refused_by_their_range_not_a_missing_argument(argv, words):
    line = refused(*argv)
    assert words in line and "expected one argument" not in line


def test_a_negative_value_inside_its_range_is_taken():
    args = parse(["sim", "--object", "planar_box", "--robot", "dual_arm_planar", "--maneuver", "object-transport",
                  "--internal-force", "-2e0"])
    assert args.internal_force == -2.0


@pytest.mark.parametrize("option", ["--q", "--frame", "--robot"])
def test_an_empty_option_value_is_refused_instead_of_meaning_the_default(option):
    assert refused("gjm", option, "") == (f"freeflyer gjm: error: argument {option}: empty; give a value, or leave "
                                          "the option out (see freeflyer gjm --help)")


def test_a_frame_fixed_to_the_world_is_not_called_a_singularity():
    code, _, err = run_cli("osi", "--frame", "universe")
    assert code == 2
    assert err == ("freeflyer osi: error: frame 'universe' is fixed to the world, not attached to robot "
                   "'planar_4link': its Jacobian is zero by definition (no singularity); give a link of the robot\n")


def test_a_100_kb_robot_name_gives_a_short_line():
    code, _, err = run_cli("sim", "--robot", "x" * 100_000)
    assert code == 2 and err.count("\n") == 1 and len(err) < 1000, len(err)
    assert "unknown robot 'xxxx" in err


def test_a_urdf_files_warnings_are_said_once_per_command(tmp_path, package_log):
    text = (SHARE / "urdf" / "planar_4link.urdf").read_text()
    urdf = tmp_path / "no_limits.urdf"
    urdf.write_text(re.sub(r"<limit[^>]*/>", "", text, count=1))  # joint1 without <limit>: one warning
    with package_log.at_level(logging.WARNING):
        code, _, _ = run_cli("sim", "--robot", str(urdf), "--base", "planar", "--ee", "ee_link", "--duration", "0.02",
                             "--no-plots", "--out", str(tmp_path / "out"))
    assert code == 0
    warnings = [m for m in package_log.messages if "has no <limit>" in m]
    assert len(warnings) == 1 and len(set(warnings)) == 1, warnings


def test_a_run_leaves_no_reserve_file_behind(tmp_path):
    code, _, _ = run_cli("sim", "--duration", "0.02", "--no-plots", "--out", str(tmp_path / "out"))
    assert code == 0
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")] == []
