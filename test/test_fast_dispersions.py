"""Dispersed runs on the compiled engine: every dispersion a campaign draws (mass properties,
sensor noise and latency, thruster misalignment, scale and failure, wheel failure, start pose)
gives the Python engine's rows to round-off on the same seed, because both engines apply the
same data (``sim.perturbation``: the sensor model and the actuator gains)."""

import numpy as np
import pytest

pytest.importorskip("numba", reason="the compiled engine needs numba (pip extra 'pypi' or 'fast')")

from fast_support import assert_same_run

from freeflyer_control.campaign.dispersions import RunPerturbation
from freeflyer_control.campaign.spec import parse_spec
from freeflyer_control.campaign.worker import simulate
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.fast.runner import not_covered
from freeflyer_control.sim.perturbation import Perturbation, Sensor, SensorModel

# Everything a campaign disperses in a pure simulation, at sizes that matter over 1-2 s.
ALL_KINDS = {
    "mass_error": {"link1": 0.08, "link2": -0.05},
    "inertia_error": {"link3": 0.1},
    "com_error": {"link2.x": 0.01, "link2.y": -0.005},
    "joint_noise": 0.002,
    "base_position_noise": 0.001,
    "base_attitude_noise": 0.002,
    "latency": 0.006,
    "thruster_misalignment": {"t1": 0.05, "t2": -0.03},
    "thruster_scale": {"t2": 0.1, "t3": -0.2},
    "thruster_failure": "t4",
    "initial_joint": {"joint1": 0.05},
    "initial_base_position": {"x": 0.01, "y": -0.02},
    "initial_base_yaw": 0.1,
    "initial_base_velocity": {"x": 0.002},
    "initial_base_rate": {"z": 0.01},
}


def dispersed(values, seed=5, **config):
    config.setdefault("robot", "planar_4link")
    config.setdefault("duration", 1.0)
    return SimConfig(perturbation=RunPerturbation(values, seed), **config)


@pytest.mark.parametrize("mode, maneuver", [
    ("floating", "wilde"), ("rotation-floating", "wilde"), ("flying", "station-keeping"),
    ("translation-flying", "ee-point"), ("rotation-flying", "ee-circle"),
])
def test_every_dispersion_gives_the_python_engines_rows_on_the_compiled_engine(mode, maneuver):
    run = assert_same_run(dispersed(ALL_KINDS, mode=mode, maneuver=maneuver))
    assert run.summary["engine"] == "compiled (numba)"


def test_each_dispersion_alone_matches_on_a_spatial_robot_too():
    spatial = {"mass_error": {"link1": 0.05}, "joint_noise": 0.001, "base_attitude_noise": 0.001, "latency": 0.004,
               "initial_base_rate": {"x": 0.01, "y": 0.0, "z": -0.01}}
    for kind, value in spatial.items():
        assert_same_run(dispersed({kind: value}, robot="spatial_6link", mode="flying", maneuver="station-keeping",
                                  duration=0.5, rate=500.0))


def test_wheel_failure_matches_in_rotation_floating():
    assert_same_run(dispersed({"wheel_failure": "wheel_y_joint", "joint_noise": 0.001}, robot="spatial_6link",
                              mode="rotation-floating", maneuver="wilde", duration=0.5, rate=500.0))


@pytest.mark.parametrize("latency, dt", [(0.0, 0.004), (0.004, 0.004), (0.006, 0.004), (0.0123, 0.001),
                                         (0.002, 0.004)])
def test_the_delay_in_ticks_is_the_sensors_newest_state_at_least_that_old(latency, dt):
    """SensorModel.delay_ticks (the compiled ring's depth) against the Sensor's own history."""
    from conftest import robot
    from freeflyer_control.physics.state import make_state

    ff = robot("planar_4link")
    model = SensorModel(latency, np.zeros(ff.model.nv), 0)
    sensor = Sensor(ff, model)
    d = model.delay_ticks(dt)
    for k in range(12):  # the state's x-velocity carries its tick
        seen = sensor(k * dt, make_state(ff, base_linear_velocity=(float(k), 0.0, 0.0))).v[0]
        assert seen == max(0, k - d)


def test_the_noise_is_drawn_in_tick_order_from_the_runs_seed():
    """Two seeds give different runs, one seed the same run: the noise is the seed's, on both
    engines (assert_same_run above holds them equal)."""
    a = dispersed({"joint_noise": 0.01}, seed=1, duration=0.2)
    b = dispersed({"joint_noise": 0.01}, seed=1, duration=0.2)
    c = dispersed({"joint_noise": 0.01}, seed=2, duration=0.2)
    ra, rb, rc = (assert_same_run(x) for x in (a, b, c))
    np.testing.assert_array_equal(ra.series["arm_torques"], rb.series["arm_torques"])
    assert np.abs(ra.series["arm_torques"] - rc.series["arm_torques"]).max() > 1e-3


def test_a_perturbation_with_code_of_its_own_stays_on_the_python_engine():
    class Gusty(Perturbation):
        def actuation(self, ff, command):
            return command

    reason = not_covered(SimConfig(perturbation=Gusty()))
    assert reason is not None and "sensing or actuation code of its own" in reason
    assert not_covered(SimConfig(perturbation=RunPerturbation(ALL_KINDS, 1))) is None


def test_a_campaign_run_flies_on_the_compiled_engine():
    spec = parse_spec({"robot": "planar_4link", "mode": "floating", "maneuver": "wilde", "duration": 0.5, "runs": 2,
                       "seed": 3, "dispersions": {"mass_error": {"uniform": [-0.1, 0.1]},
                                                  "joint_noise": {"uniform": [0.0, 0.001]},
                                                  "latency": {"uniform": [0.0, 0.01]}}})
    assert simulate(spec, 1).summary["engine"] == "compiled (numba)"
