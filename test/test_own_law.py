"""A control law of the user's own (control.law) runs unchanged in every front end, and the
package's guarantees hold around it.

The laws are in ``laws_for_tests.py``, written against the public interface only, as a lab
writes its own. "The same law run directly" means: a fresh law object called by hand on the
states, references and modes a front end gave it returns bit for bit what the front end got, so
the front end ran the law unchanged (same inputs, same outputs, nothing added on the way in).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import robot

import laws_for_tests as L
from freeflyer_control.control.context import LawContext
from freeflyer_control.control.law import ControlLaw, Parameter
from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import make_maneuver
from freeflyer_control.laws import load_law_class, make_law, parse_assignments
from freeflyer_control.physics.modes import Mode
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation


def _replay(recorded, model, period) -> float:
    """Largest difference between what a recording law returned in a front end and what a fresh
    JointPD returns for the same (t, state, reference, mode), called directly."""
    law = L.JointPD(**dict(recorded.params))
    context = LawContext(model, period)
    worst = 0.0
    for t, state, reference, mode, out in recorded.calls:
        again = law.effort(state, reference, context.begin(t, state, mode))
        for a, b in ((out.arm_torques, again.arm_torques), (out.wheel_torques, again.wheel_torques),
                     (out.base_wrench_world, again.base_wrench_world)):
            worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)))
    return worst


# --- the interface --------------------------------------------------------------------------

def test_a_law_written_from_the_context_flies_the_wilde_maneuver_as_the_built_in_computed_torque():
    """JointPD is computed torque written in ten lines against the context's H*, C*; in floating
    mode (nothing commanded on the base) it is the built-in law, so the runs agree to round-off
    (1e-12 rad: the same arithmetic, one matrix product ordered differently at most)."""
    config = dict(robot="spatial_6link", maneuver="wilde", duration=3.0, rate=100.0)
    built_in = run_simulation(SimConfig(controller="computed_torque", **config), fast=False)
    own = run_simulation(SimConfig(controller=L.JointPD(), **config))
    assert own.summary["engine"] == "python" and own.summary["controller"] == "joint_pd"
    assert own.summary["law_fault"] is None
    for key in ("joint_positions", "joint_velocities", "arm_torques", "base_orientation_xyzw"):
        np.testing.assert_allclose(own.series[key], built_in.series[key], rtol=0, atol=1e-12, err_msg=key)


def test_the_built_in_laws_are_control_laws_with_declared_parameters():
    for name in ("computed_torque", "resolved_rate", "impedance"):
        cls = load_law_class(name)
        assert issubclass(cls, ControlLaw) and cls.label() == name and cls.parameters
    law = make_law("resolved_rate", {"velocity_gain": "7.5"})
    assert law.params.velocity_gain == 7.5 and law.velocity_gain == 7.5
    assert law.compiled_name is None  # not at its defaults: the compiled engine cannot fly it
    assert make_law("resolved_rate").compiled_name == "resolved_rate"


@pytest.mark.parametrize("params, words", [
    ({"kp": "-1"}, "joint_pd: parameter kp must be float in [0, 100], got '-1'"),
    ({"kp": "fast"}, "parameter kp must be float in [0, 100], got 'fast'"),
    ({"kp": "nan"}, "parameter kp must be float in [0, 100]"),
    ({"gain": "1"}, "joint_pd: unknown parameter 'gain'; its parameters: kp, kd"),
])
def test_bad_parameter_values_are_refused_before_anything_runs(params, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        make_law("laws_for_tests:JointPD", params)


def test_a_parameter_declaration_is_checked_and_values_are_typed():
    with pytest.raises(ValueError, match="default"):
        Parameter("k", float, -1.0, (0.0, 1.0))
    p = Parameter("n", int, 3, (1, 10), "count")
    assert p.check("4") == 4 and p.check(5.0) == 5
    with pytest.raises(ValueError):
        p.check(2.5)
    assert Parameter("on", bool, False).check("true") is True
    with pytest.raises(ValueError):
        Parameter("on", bool, False).check(1)  # a bool is said as one
    law = L.JointPD(kp=2)
    assert law.params.kp == 2.0 and isinstance(law.params.kp, float)
    with pytest.raises(AttributeError):
        law.params.kp = 3.0


@pytest.mark.parametrize("spec, words", [
    ("laws_for_tests:NotALaw", "is not a control law"),
    ("laws_for_tests:Nothing", "has no 'Nothing'"),
    ("no_such_module_here:Law", "module 'no_such_module_here' not found"),
    ("sliding", "unknown controller 'sliding'; available: computed_torque, resolved_rate, impedance"),
    ("a b:c", "is not an import path"),
])
def test_a_law_that_cannot_be_named_is_refused_in_one_line(spec, words):
    with pytest.raises(ValueError, match=words):
        load_law_class(spec)


def test_assignments_are_name_value_pairs_given_once():
    assert parse_assignments(["kp=2", "kd = 0.5"]) == {"kp": "2", "kd": "0.5"}
    for bad in (["kp"], ["=2"], ["kp=1", "kp=2"]):
        with pytest.raises(ValueError, match="--controller-param"):
            parse_assignments(bad)


def test_the_context_computes_each_quantity_once_per_tick_and_anew_the_next():
    ff = robot("planar_4link")
    loop = ControlLoop(ff, make_maneuver("wilde"), controller=L.JointPD())
    from freeflyer_control.physics.state import make_state

    state = make_state(ff, joint_positions={"joint1": 0.2, "joint2": -0.3, "joint3": 0.4, "joint4": 0.1})
    context = loop.context.begin(0.0, state, Mode.FLOATING)
    G = context.gjm("ee_link")
    assert context.gjm("ee_link") is G and context.reduced_dynamics() is context.reduced_dynamics()
    assert context.leaving_view(Mode.FLYING).mass_matrix() is context.mass_matrix()  # mode-free: shared
    assert context.leaving_view(Mode.FLYING).gjm("ee_link") is not G  # the mode's own: computed for it
    context.begin(0.004, state, Mode.FLOATING)
    assert context.gjm("ee_link") is not G


# --- every front end ------------------------------------------------------------------------

def test_the_same_law_object_runs_unchanged_in_the_simulation():
    law = L.Recording(kp=2.0)
    result = run_simulation(SimConfig(robot="planar_4link", controller=law, duration=1.0, rate=100.0))
    assert result.summary["controller"] == "recording" and len(law.calls) == 101
    assert _replay(law, robot("planar_4link"), 0.01) == 0.0


def test_the_same_law_runs_unchanged_in_a_campaign_with_its_parameters(tmp_path):
    """A campaign of the law by import path, with controller_params and a mass dispersion: each
    run gets a law object of its own with the spec's kp, the row is the run flown alone, and
    the law in it is the law run directly on the dispersed controller model."""
    from freeflyer_control.campaign.spec import load_spec
    from freeflyer_control.campaign.worker import fly, run_config

    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text("robot: planar_4link\nmaneuver: wilde\nduration: 1.0\nrate: 100\nruns: 2\nseed: 4\n"
                         "controller: laws_for_tests:Recording\ncontroller_params: {kp: 2.0}\n"
                         "dispersions: {mass_error: {uniform: [-0.05, 0.05]}}\n")
    spec = load_spec(spec_path)
    row = fly(spec, 1)
    assert row["status"] == "ok", row["error"]
    config = run_config(spec, 1)[0]
    law = config.controller
    assert isinstance(law, L.Recording) and law.params.kp == 2.0 and run_config(spec, 1)[0].controller is not law
    # Flown alone as the campaign flies it (engine auto: the law on the Python engine, the plant
    # step compiled where numba is installed), so the row is that run's, bit for bit.
    result = run_simulation(config)
    assert result.summary["rms_tracking_error"] == row["rms_tracking_error"]
    model = config.perturbation.controller_model(robot("planar_4link"))
    assert _replay(law, model, 0.01) == 0.0


def test_the_same_law_runs_unchanged_in_the_controller_server_and_the_hil_runner():
    from freeflyer_control.hil.config import load_testbed_config
    from freeflyer_control.hil.runner import run_hil
    from freeflyer_control.physics.state import make_state
    from freeflyer_control.runtime.controller_server import ControllerServer

    tb = load_testbed_config("planar_4link")
    ff = tb.robot
    law = L.Recording()
    run = run_hil(tb, make_maneuver("wilde"), make_state(ff), 1.5, controller=law)
    assert run.controller.loop.law is law and len(law.calls) > 50
    assert not run.trips, run.trips
    assert _replay(law, ff, tb.period) == 0.0
    # The server on its own, by name among the laws it was given.
    server = ControllerServer(ff, rate=100.0, controller="recording", laws={"recording": L.Recording(),
                                                                            "computed_torque": make_law("computed_torque")})
    assert server.loop.controller == "recording"
    server.set_controller("computed_torque")
    with pytest.raises(ValueError, match="is not loaded; the loaded laws are"):
        server.set_controller("impedance")


def test_a_mode_the_law_refuses_is_refused_with_its_reason():
    ff = robot("planar_4link")
    loop = ControlLoop(ff, make_maneuver("wilde"), controller=L.JointPD())
    switch = loop.request_mode("flying", 1.0)
    assert not switch.accepted and switch.reason == "joint_pd flies floating mode only"
    with pytest.raises(ValueError, match="joint_pd flies floating mode only"):
        ControlLoop(ff, make_maneuver("wilde"), controller=L.JointPD(), mode="flying")


# --- what the package guarantees around a law ----------------------------------------------

FAULTY = [(L.Raises, "raised IndexError"), (L.GivesNaN, "returned non-finite arm_torques"),
          (L.OverLimit, "returned arm_torques 3000 N m, over 100 times the limit 3 N m"),
          (L.TooSlow, "slower than its period: 3 ticks running over 4 ms")]


@pytest.mark.parametrize("law, words", FAULTY, ids=[c.__name__ for c, _ in FAULTY])
def test_a_failing_law_ends_the_simulation_with_zero_commands_and_says_which_and_why(law, words):
    # overrun_limit 3, as a node has it (a simulation only counts overruns unless asked).
    result = run_simulation(SimConfig(robot="planar_4link", controller=law(after=0.2), duration=2.0, log_rate=250.0,
                                      overrun_limit=3))
    s = result.summary
    name = law.label()
    assert s["law_fault"].startswith(f"control law '{name}' at t = ") and words in s["law_fault"]
    t_end = result.series["t"][-1, 0]
    # The fault comes at the first failing tick (t >= 0.2 s), the third running one for an overrun.
    assert 0.2 - 1e-9 <= t_end <= 0.2 + 3 * 0.004 + 1e-9 and s["t_reached_s"] == t_end
    assert np.all(result.series["arm_torques"][-1] == 0.0)  # the last tick commanded nothing
    assert s["law_overruns"] >= (3 if law is L.TooSlow else 0)


def test_ctrl_c_inside_a_compiled_call_of_the_law_stops_the_run_as_ctrl_c_not_as_a_law_fault(tmp_path, capsys):
    # Found by .ci/run under load: kill -INT landing while the law was in the compiled GJM ended
    # the run as a law fault (exit 3) instead of an interrupted run (exit 130).
    from freeflyer_control.cli.main import main

    code = main(["sim", "--controller", "laws_for_tests:InterruptedInCompiledCall", "--controller-param",
                 "after=0.1", "--duration", "1", "--out", str(tmp_path / "o"), "--no-plots"])
    err = capsys.readouterr().err
    assert code == 130 and "interrupted at t = " in err and "Traceback" not in err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["law_fault"] is None


def test_a_failing_law_exits_3_on_the_command_line_with_one_line(tmp_path, capsys, monkeypatch):
    from freeflyer_control.cli.main import main

    code = main(["sim", "--controller", "laws_for_tests:GivesNaN", "--controller-param", "after=0.1",
                 "--duration", "1", "--out", str(tmp_path / "o"), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3
    assert err[-1].startswith("freeflyer sim: error: control law 'gives_nan' at t = 0.1 s: returned non-finite")
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["law_fault"].startswith("control law 'gives_nan'")


@pytest.mark.parametrize("law, words", FAULTY[:3], ids=[c.__name__ for c, _ in FAULTY[:3]])
def test_a_failing_law_trips_the_testbed_bridge_and_everything_goes_to_zero(law, words):
    from freeflyer_control.hil.config import load_testbed_config
    from freeflyer_control.hil.runner import run_hil
    from freeflyer_control.physics.state import make_state

    tb = load_testbed_config("planar_4link")
    commands = []
    run = run_hil(tb, make_maneuver("station-keeping"), make_state(tb.robot), 3.0,
                  controller=law(after=1.5), on_tick=lambda t, out: commands.append((t, out)))
    trips = run.trips
    assert trips and trips[0].kind == "law_fault" and f"control law '{law.label()}'" in trips[0].reason
    assert words in trips[0].reason
    # From the tick after the trip, the bridge sends the safe commands: efforts zero, valves shut.
    after = [out for t, out in commands if t > trips[0].time + tb.period + 1e-9]
    assert after and all(not np.any(out.command.joint_efforts) for out in after)
    assert all(out.command.thrusters is None or not np.any(out.command.thrusters) for out in after)
    assert run.controller.stats.faults >= 1 and run.controller.loop.fault.law == law.label()


def test_a_law_too_slow_for_the_bridge_trips_it():
    from freeflyer_control.hil.config import load_testbed_config
    from freeflyer_control.hil.runner import run_hil
    from freeflyer_control.physics.state import make_state

    tb = load_testbed_config("planar_4link")
    run = run_hil(tb, make_maneuver("wilde"), make_state(tb.robot), 2.0, controller=L.TooSlow(after=1.0))
    assert run.trips and run.trips[0].kind == "law_fault" and "slower than its period" in run.trips[0].reason
    assert run.controller.loop.guard.timing.overruns >= 3


# --- the command line -----------------------------------------------------------------------

def test_freeflyer_controllers_lists_every_law_one_line_each_and_a_laws_parameters(capsys):
    from freeflyer_control.cli.main import main

    assert main(["controllers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name in ("computed_torque", "resolved_rate", "impedance"):
        line = next(line for line in lines if line.startswith(name + " "))
        assert "built-in" in line and "parameters)" in line
    assert "freeflyer_control.controllers" in lines[-1]
    assert main(["controllers", "laws_for_tests:JointPD"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "joint_pd: Computed torque on the context's H*, C*, in floating mode (no base DOF commanded)."
    assert out[1].split() == ["kp", "1.0", "float", "in", "[0,", "100]", "joint", "stiffness,", "1/s^2"]


@pytest.mark.parametrize("argv, message", [
    (["--controller", "laws_for_tests:JointPD", "--engine", "compiled"],
     "freeflyer sim: error: the compiled simulation does not cover this run: controller joint_pd (computed_torque "
     "and resolved_rate at their default parameters are compiled; other laws run on the python engine)"),
    (["--controller", "laws_for_tests:JointPD", "--controller-param", "kp=200"],
     "freeflyer sim: error: --controller: joint_pd: parameter kp must be float in [0, 100], got '200'"),
    (["--controller", "laws_for_tests:JointPD", "--mode", "flying"],
     "freeflyer sim: error: joint_pd flies floating mode only"),
    (["--controller", "computed_torque", "--controller-param", "kp"],
     "freeflyer sim: error: --controller: --controller-param 'kp' must look like NAME=VALUE, e.g. "
     "--controller-param kp=2.0"),
])
def test_a_law_the_run_cannot_fly_is_refused_in_one_line_before_it_starts(tmp_path, capsys, argv, message):
    from freeflyer_control.cli.main import main

    assert main(["sim", *argv, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == message
    assert not (tmp_path / "o").exists()  # refused before anything was made


def test_the_guard_names_what_is_wrong_with_an_effort():
    from freeflyer_control.control.effort import ControlEffort
    from freeflyer_control.control.law_guard import LawGuard

    ff = robot("planar_4link")
    guard, zero = LawGuard(ff), ControlEffort.zero(ff)
    assert guard.problem(zero) is None
    cases = [
        (3.0, "returned float, not a ControlEffort"),
        (ControlEffort([0.0] * 4, zero.wheel_torques, zero.base_wrench_world), "returned arm_torques as list"),
        (ControlEffort(np.zeros(5), zero.wheel_torques, zero.base_wrench_world),
         "returned arm_torques of shape (5,); the robot needs (4,)"),
        (ControlEffort(zero.arm_torques, zero.wheel_torques, np.array([0.0, np.inf, 0.0])),
         "returned non-finite base_wrench_world [0.0, inf, 0.0]"),
        (ControlEffort(zero.arm_torques, np.array([60.0]), zero.base_wrench_world),
         "returned wheel_torques 60 N m, over 100 times the limit 0.5 N m"),
    ]
    for effort, words in cases:
        assert guard.problem(effort).startswith(words), guard.problem(effort)
    # A saturating law is clipped, not stopped: 50 times a limit passes the guard.
    assert guard.problem(ControlEffort(50.0 * ff.arm_effort_limits, zero.wheel_torques, zero.base_wrench_world)) is None


def test_a_failing_law_through_the_emulated_testbed_trips_the_bridge_and_exits_3(tmp_path, capsys):
    from freeflyer_control.cli.main import main

    code = main(["sim", "--via-testbed", "--controller", "laws_for_tests:Raises", "--controller-param", "after=1.0",
                 "--maneuver", "station-keeping", "--duration", "2", "--out", str(tmp_path / "o"), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and "control law 'raises' at t = 1" in err[-1]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    trip = summary["testbed_trips"][0]
    assert trip["kind"] == "law_fault" and "raised IndexError" in trip["reason"] and summary["engine"] == "testbed emulator"
