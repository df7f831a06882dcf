"""Campaign specs, dispersions, seeds, statistics and the journal, without a Dask cluster
(the runs are flown in this process by the same function a worker calls)."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest
import yaml

from freeflyer_control.campaign import report
from freeflyer_control.campaign.dispersions import KINDS
from freeflyer_control.campaign.journal import Journal
from freeflyer_control.campaign.spec import METRICS, TESTBED_METRICS, parse_spec
from freeflyer_control.campaign.worker import fly, run_config, simulate
from freeflyer_control.cli.main import main, parse
from freeflyer_control.physics.state import make_state
from freeflyer_control.sim.perturbation import Perturbation
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation

# Short runs: 0.2 s at 250 Hz is 50 control ticks, enough for every dispersion to show.
BASE = {"robot": "planar_4link", "mode": "floating", "controller": "computed_torque", "maneuver": "wilde",
        "duration": 0.2, "runs": 6, "seed": 7}
# Flying: the bridge fires the valves, so valve and command dispersions show too.
TESTBED = {"via_testbed": "planar_4link", "mode": "flying", "maneuver": "station-keeping", "duration": 0.4,
           "runs": 3, "seed": 7}

# A nonzero value of each kind, large enough to move the flight measurably.
SIM_VALUES = {
    "mass_error": 0.2, "inertia_error": 0.2, "com_error": 0.02, "joint_noise": 0.01,
    "base_position_noise": 0.01, "base_attitude_noise": 0.01, "latency": 0.02,
    "thruster_misalignment": 0.1, "thruster_scale": 0.3, "thruster_failure": "t1",
    "wheel_failure": "wheel_z_joint", "initial_joint": 0.05, "initial_base_position": 0.1,
    "initial_base_yaw": 0.1, "initial_base_velocity": 0.05, "initial_base_rate": 0.05,
}
TESTBED_VALUES = {
    "capture_position_noise": 0.01, "capture_attitude_noise": 0.02, "capture_latency": 0.05,
    "capture_dropout_rate": 0.5, "encoder_latency": 0.05, "encoder_velocity_noise": 0.05,
    "valve_delay": 0.05, "command_latency": 0.02, "fault": "push:0.05:0.2:2,0,0",
    "initial_base_velocity": 0.05,
}
# Thruster dispersions need thrusters that fire (flying: the base is held), base sensing a
# controller that reads the base pose (the same), a wheel failure a wheel in use (rotation-floating).
THRUSTER_RUN = {"mode": "flying", "base_actuation": "thrusters"}
WHEEL_RUN = {"mode": "rotation-floating"}


def flight(summary: dict) -> tuple:
    return tuple(summary[m] for m in METRICS if summary[m] is not None)


def spec_of(**changes):
    return parse_spec({**BASE, **changes})


def test_every_kind_of_the_registry_is_exercised_here():
    assert set(SIM_VALUES) | set(TESTBED_VALUES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(SIM_VALUES))
def test_each_pure_simulation_dispersion_changes_the_flight(kind):
    extra = THRUSTER_RUN if kind.startswith(("thruster_", "base_")) else WHEEL_RUN if kind == "wheel_failure" else {}
    plain = spec_of(**extra)
    dispersed = spec_of(**extra, dispersions={kind: SIM_VALUES[kind]})
    row = fly(dispersed, 0)
    assert row["status"] == "ok", row["error"]
    assert flight(simulate(dispersed, 0).summary) != flight(simulate(plain, 0).summary)
    assert set(dispersed.flat(dispersed.draw(0))) == set(dispersed.columns())


@pytest.mark.parametrize("kind", sorted(set(TESTBED_VALUES) - {"encoder_velocity_noise"}))
def test_each_testbed_dispersion_changes_the_flight(kind):
    plain = parse_spec(TESTBED)
    dispersed = parse_spec({**TESTBED, "dispersions": {kind: TESTBED_VALUES[kind]}})
    a, b = simulate(dispersed, 0).summary, simulate(plain, 0).summary
    keys = METRICS + ("estimation_error_base_position_m", "estimation_error_joints_rad")
    assert [a[k] for k in keys] != [b[k] for k in keys]


def test_encoder_velocity_noise_reaches_the_emulator():
    # The bundled testbed's drivers report no velocities (the bridge estimates them), so this
    # dispersion cannot move its flight; it must still be what the emulator is given.
    spec = parse_spec({**TESTBED, "dispersions": {"encoder_velocity_noise": {"uniform": [0.01, 0.02]}}})
    settings = run_config(spec, 1)[1]
    assert settings.encoder_velocity_noise == spec.draw(1)["encoder_velocity_noise"]
    assert 0.01 <= settings.encoder_velocity_noise <= 0.02


def test_the_identity_perturbation_changes_nothing():
    config = dict(robot="planar_4link", maneuver="wilde", duration=0.2)
    a = run_simulation(SimConfig(**config), fast=False).summary
    b = run_simulation(SimConfig(**config, perturbation=Perturbation()), fast=False).summary
    assert flight(a) == flight(b)


def test_metrics_are_the_numeric_figures_of_a_real_summary():
    # Settings and bookkeeping of the run, not figures of its flight (the law's CPU time per tick
    # and its overruns depend on the machine that flies the run).
    ignored = {"duration_s", "rate_hz", "mass_error", "real_time_factor", "wall_time_s", "t_reached_s",
               "law_overruns", "law_longest_tick_s"}
    summary = simulate(spec_of(maneuver="ee-point", duration=0.1), 0).summary
    numeric = {k for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numeric - ignored == set(METRICS)
    tb = simulate(parse_spec(TESTBED), 0).summary
    numeric = {k for k, v in tb.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numeric - ignored - {"min_sigma"} | {"testbed_trip_count"} == (set(METRICS) | set(TESTBED_METRICS)) - {"min_sigma"}


def test_a_run_draws_the_same_values_whatever_else_is_in_the_campaign():
    a = spec_of(dispersions={"mass_error": {"uniform": [-0.1, 0.1]}})
    b = spec_of(runs=500, dispersions={"joint_noise": {"normal": [0, 0.001], "min": 0},
                                       "mass_error": {"uniform": [-0.1, 0.1]}})
    assert [a.draw(i)["mass_error"] for i in range(6)] == [b.draw(i)["mass_error"] for i in range(6)]
    assert a.draw(0) != a.draw(1)
    assert a.run_seed(3) == b.run_seed(3) != a.run_seed(4)


def test_a_truncated_normal_stays_in_its_bounds_and_a_choice_follows_its_probabilities():
    spec = spec_of(runs=400, dispersions={"joint_noise": {"normal": [0.0, 0.001], "min": 0.0, "max": 0.0005},
                                          "thruster_failure": {"choice": ["none", "t1"], "p": [0.75, 0.25]}},
                   **THRUSTER_RUN)
    draws = [spec.draw(i) for i in range(400)]
    assert all(0.0 <= d["joint_noise"] <= 0.0005 for d in draws)
    share = sum(d["thruster_failure"] == "t1" for d in draws) / 400
    assert abs(share - 0.25) < 4 * math.sqrt(0.25 * 0.75 / 400)  # 4 binomial standard deviations


def test_a_mass_error_cannot_change_the_momentum_of_a_floating_robot():
    # No external force in floating mode: the controller's wrong model moves the arm differently,
    # but the total linear momentum stays zero (round-off) in every run, and all runs pass.
    spec = spec_of(dispersions={"mass_error": {"uniform": [-0.3, 0.3]}},
                   criteria={"max_abs_linear_momentum": {"max": 1e-9}})
    rows = {i: fly(spec, i) for i in range(spec.runs)}
    summary = report.summarize(spec, rows)
    assert summary["metrics"]["max_abs_linear_momentum"]["max"] < 1e-12
    assert summary["metrics"]["rms_tracking_error"]["max"] > summary["metrics"]["rms_tracking_error"]["p5"]
    assert summary["pass_rate"] == 1.0
    n, z = 6, report.Z95
    assert summary["pass_rate_ci95"] == pytest.approx([n / (n + z * z), 1.0])  # Wilson at p = 1


def test_criteria_no_run_can_meet_give_a_zero_pass_rate():
    spec = spec_of(dispersions={"mass_error": {"uniform": [-0.1, 0.1]}},
                   criteria={"rms_tracking_error": {"max": 0.0}})
    rows = {i: fly(spec, i) for i in range(spec.runs)}
    summary = report.summarize(spec, rows)
    n, z = 6, report.Z95
    assert (summary["runs_passed"], summary["pass_rate"]) == (0, 0.0)
    assert summary["pass_rate_ci95"] == pytest.approx([0.0, z * z / (n + z * z)])


def test_wilson_interval_matches_the_textbook_value():
    # 8 of 10: Wilson 95 % interval (0.4902, 0.9433), e.g. Newcombe 1998, Table I.
    lo, hi = report.wilson_interval(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_run_that_raises_is_recorded_as_failed_with_its_error(monkeypatch):
    import freeflyer_control.campaign.worker as worker

    spec = spec_of(dispersions={"mass_error": {"uniform": [-0.1, 0.1]}})
    real = worker.simulate

    def simulate(spec, run, **kwargs):
        if run % 2:
            raise ValueError("injected failure")
        return real(spec, run, **kwargs)

    monkeypatch.setattr(worker, "simulate", simulate)
    rows = {i: fly(spec, i) for i in range(spec.runs)}
    failed = [r for r in rows.values() if r["status"] == "failed"]
    assert [r["run"] for r in failed] == [i for i in range(spec.runs) if i % 2]
    assert all(r["error"].startswith("ValueError: injected failure (") for r in failed)
    assert report.summarize(spec, rows)["runs_failed"] == len(failed)


def test_a_run_whose_plant_diverges_is_recorded_as_failed_with_the_reason():
    # A base spun at 1e50 rad/s is past the plant's velocity bound at its first step: the
    # simulation stops there (exit 3 for freeflyer sim); the campaign records the run as failed.
    spec = spec_of(dispersions={"initial_base_rate": {"choice": [0.0, 1e50]}})
    rows = {i: fly(spec, i) for i in range(spec.runs)}
    failed = [r for r in rows.values() if r["status"] == "failed"]
    assert failed and len(failed) < spec.runs
    assert all(r["initial_base_rate[z]"] == 1e50 and r["error"].startswith("PlantDiverged: plant diverged")
               for r in failed)
    assert report.summarize(spec, rows)["runs_failed"] == len(failed)


def test_replaying_a_run_with_freeflyer_sim_gives_its_summary(tmp_path):
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({**BASE, "dispersions": {"mass_error": {"uniform": [-0.1, 0.1]},
                                                                  "joint_noise": 0.001}}))
    spec = parse_spec(yaml.safe_load(spec_path.read_text()))
    row = fly(spec, 4)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["sim", "--campaign", str(spec_path), "--run", "4", "--out", str(tmp_path / "r4"),
                     "--json", "--no-plots"])
    assert code == 0
    summary = json.loads(out.getvalue())
    assert all(summary[m] == row[m] for m in METRICS if summary[m] is not None)


def test_the_journal_keeps_the_first_row_of_a_run_and_skips_a_cut_line(tmp_path):
    spec = spec_of()
    journal = Journal(tmp_path, spec)
    assert journal.record([{"run": 0, "status": "ok", "x": 1}, {"run": 1, "status": "ok", "x": 1}]) == 2
    assert journal.record([{"run": 1, "status": "ok", "x": 2}]) == 0  # a redone run: not counted twice
    journal.close()
    with open(tmp_path / "journal.jsonl", "a") as f:
        f.write('{"run": 2, "stat')  # a crash mid-write
    again = Journal(tmp_path, spec)
    assert sorted(again.rows) == [0, 1] and again.rows[1]["x"] == 1
    again.record([{"run": 2, "status": "ok"}])
    again.close()
    assert sorted(Journal(tmp_path, spec).rows) == [0, 1, 2]


def test_a_folder_holding_another_spec_is_refused(tmp_path):
    Journal(tmp_path, spec_of()).close()
    with pytest.raises(ValueError, match="holds a campaign of another spec"):
        Journal(tmp_path, spec_of(seed=8))


def refusal(tmp_path, capsys, spec, *extra) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec) if isinstance(spec, dict) else spec)
    with pytest.raises(SystemExit) as exc:
        parse(["campaign", str(path), "--out", str(tmp_path / "out"), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()  # refused before anything runs
    return err


@pytest.mark.parametrize("spec, message", [
    ({**BASE, "runz": 3}, "unknown key 'runz'; the keys are"),
    ({**BASE, "dispersions": {"mass_eror": 0.1}}, "unknown dispersion 'mass_eror'; the kinds are mass_error"),
    ({**BASE, "dispersions": {"mass_error": {"uniform": [-1.5, 1.5]}}},
     "dispersions.mass_error a relative error must stay inside (-1, 1)"),
    ({**BASE, "dispersions": {"joint_noise": {"normal": [0.0, 0.001]}}}, "dispersions.joint_noise cannot be negative"),
    ({**BASE, "dispersions": {"joint_noise": {"normal": [0.0, 0.001], "mn": 0}}}, "unknown key 'mn' in a normal"),
    ({**BASE, "dispersions": {"latency": 0.5}}, "not shorter than the run (0.2 s)"),
    ({**BASE, "dispersions": {"thruster_failure": {"choice": ["none", "t9"]}}}, "'t9' is not one of robot planar_4link"),
    ({**BASE, "dispersions": {"capture_latency": 0.01}}, "is a setting of the emulated testbed; add via_testbed"),
    ({**TESTBED, "dispersions": {"mass_error": 0.1}}, "acts on the pure simulation, not through via_testbed"),
    ({**BASE, "dispersions": {"thruster_choice": {"choice": ["a"], "p": [0.5]}}}, "unknown dispersion"),
    ({**BASE, "dispersions": {"joint_noise": {"choice": [0.1, 0.2], "p": [0.5, 0.6]}}}, "summing to 1"),
    ({**BASE, "criteria": {"rms_error": {"max": 0.05}}},
     "criteria.rms_error: no such metric; the metrics are max_abs_linear_momentum"),
    ({**BASE, "criteria": {"rms_tracking_error": {"below": 0.05}}}, "takes {max: x}, {min: x} or both"),
    ({**BASE, "runs": 0}, "runs must be a whole number in [1, 1000000]"),
    ({**BASE, "rate": 1e9}, "rate"),
    ("robot: [", "not valid YAML at line"),
])
def test_bad_specs_are_refused_in_one_line_before_anything_runs(tmp_path, capsys, spec, message):
    assert message in refusal(tmp_path, capsys, spec)


def test_a_scheduler_address_without_a_scheme_is_refused(tmp_path, capsys):
    err = refusal(tmp_path, capsys, BASE, "--scheduler", "127.0.0.1:8786")
    assert "give the address as tcp://HOST:PORT" in err


def test_the_progress_bar_shows_runs_failures_and_time_left():
    from freeflyer_control.campaign.engine import CampaignProgress

    stream = io.StringIO()  # not a terminal: one line per update
    bar = CampaignProgress(stream, width=10)
    bar(6, 20, 1, 150.0)
    bar(20, 20, 2, 0.0)
    assert stream.getvalue().splitlines() == ["[###.......] 6/20 runs, 1 failed, about 2.5 min left",
                                              "[##########] 20/20 runs, 2 failed"]


def test_tasks_shrink_to_single_runs_towards_the_end_unless_the_spec_fixes_the_batch():
    from freeflyer_control.campaign.engine import split

    tasks = split(spec_of(), list(range(16)), 2)
    assert [len(t) for t in tasks] == [2, 2, 2, 2] + [1] * 8
    assert sum(tasks, []) == list(range(16))
    assert max(len(t) for t in split(spec_of(), list(range(1000)), 2)) == 25
    assert [len(t) for t in split(spec_of(batch=7), list(range(16)), 2)] == [7, 7, 2]


def test_a_campaign_without_dask_installed_is_refused_naming_the_extra(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real(name, *a))
    err = refusal(tmp_path, capsys, BASE)
    assert err == ("freeflyer campaign: error: campaigns run on Dask distributed, which is not installed: "
                   "pip install 'freeflyer_control[campaign]'\n")


@pytest.mark.parametrize("robot", ["planar_4link", "spatial_6link"])
def test_initial_state_offsets_are_where_the_spec_puts_them_in_world(robot):
    spec = spec_of(robot=robot, dispersions={"initial_base_yaw": 0.3, "initial_base_position": 0.1,
                                             "initial_base_velocity": -0.05, "initial_base_rate": 0.2,
                                             "initial_joint": 0.05})
    s = simulate(spec, 0).series
    axes = 2 if robot.startswith("planar") else 3
    # First sample, t = 0: exact up to the quaternion's round-off.
    assert s["base_orientation_xyzw"][0] == pytest.approx([0, 0, math.sin(0.15), math.cos(0.15)], abs=1e-12)
    assert s["base_position"][0][:axes] == pytest.approx([0.1] * axes, abs=1e-12)
    assert s["base_linear_velocity"][0][:axes] == pytest.approx([-0.05] * axes, abs=1e-12)
    rate_axes = slice(2, 3) if axes == 2 else slice(0, 3)
    assert s["base_angular_velocity"][0][rate_axes] == pytest.approx([0.2] * (3 if axes == 3 else 1), abs=1e-12)
    arm = [spec.robot.joint_names.index(j) for j in spec.robot.arm_joint_names]
    assert s["joint_positions"][0][arm] == pytest.approx([0.05] * len(arm), abs=1e-12)


def test_latency_shows_the_newest_state_at_least_that_old():
    from freeflyer_control.sim.perturbation import Sensor, SensorModel
    from conftest import robot

    ff = robot("planar_4link")
    sensor = Sensor(ff, SensorModel(0.006, np.zeros(ff.model.nv), 0))  # no noise: no random numbers drawn
    seen = []
    for k in range(5):  # control period 4 ms; the state's x-velocity carries its time stamp
        state = make_state(ff, base_linear_velocity=(k * 0.004, 0.0, 0.0))
        seen.append(sensor(k * 0.004, state).v[0])
    # at 0 and 4 ms nothing is 6 ms old yet: the first state; then the newest at least 6 ms old.
    assert seen == pytest.approx([0.0, 0.0, 0.0, 0.004, 0.008], abs=1e-15)


def test_a_dispersed_start_outside_the_joint_limits_is_a_failed_run_naming_the_joint():
    # planar_4link's arm joints are limited to +-2.5 rad: a 10 rad offset cannot be flown, and
    # must not pass as a run with a perfect score.
    spec = spec_of(dispersions={"initial_joint": {"choice": [0.0, 10.0], "p": [0.9, 0.1]}})
    rows = {i: fly(spec, i) for i in range(spec.runs)}
    failed = [r for r in rows.values() if r["status"] == "failed"]
    assert failed and len(failed) < spec.runs
    assert all("is outside its URDF limits [-2.5, 2.5] rad; narrow the initial-state dispersion" in r["error"]
               for r in failed)


def test_the_report_page_holds_the_pass_rate_its_interval_the_plots_and_links_to_the_worst_replays(tmp_path):
    """report.html of a small campaign, written as `freeflyer campaign` writes it (the runs flown
    here, in this process): one page that opens from disk, linking each worst run's replay."""
    import base64
    import re

    from freeflyer_control.campaign.report_html import write_report
    from freeflyer_control.sim.replay import replay_missing

    spec = spec_of(runs=4, worst=2, criteria={"rms_tracking_error": {"max": 0.05}},
                   dispersions={"mass_error": 0.2})
    rows = {i: fly(spec, i) for i in range(spec.runs)}
    summary = report.write_summary(spec, rows, tmp_path)
    plots = report.write_plots(spec, rows, tmp_path)
    replay = replay_missing() is None
    report.write_worst(spec, rows, tmp_path, plots=False, replay=replay)
    worst = report.worst_runs(spec, rows, spec.worst)
    page = write_report(spec, rows, summary, tmp_path, worst, plots).read_text()
    lo, hi = summary["pass_rate_ci95"]
    assert f"Wilson interval {lo:.1%} .. {hi:.1%}" in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(plots) > 0 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    for run in worst:
        link = f"worst/run_{run:05d}/replay.html"
        assert (f'href="{link}"' in page) == replay
        assert not replay or (tmp_path / link).is_file()
    # Nothing is loaded from elsewhere: the only src= are the embedded images.
    assert len(re.findall(r"\ssrc=", page)) == len(images)
