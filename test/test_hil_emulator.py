"""The testbed emulator speaks the testbed config's wire format around a faithful plant."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import example_variant

from freeflyer_control.errors import ConfigError
from freeflyer_control.hil.config import load_testbed_config
from freeflyer_control.hil.emulator import EmulatorSettings, Fault, TestbedEmulator
from freeflyer_control.hil.frames import tilt
from freeflyer_control.physics.momentum import centroidal_momentum
from freeflyer_control.physics.state import (
    base_position,
    base_rotation,
    joint_positions,
    make_state,
)

CONFIG_PATH = Path(__file__).parents[1] / "config/testbeds/planar_4link.yaml"
PLANT_DT = 1e-3      # EmulatorSettings' default plant rate, 1 kHz
ROUND_OFF = 1e-12    # exact arithmetic up to a few ulps of O(1) quantities
PERFECT = EmulatorSettings()  # no noise, latency, delay or quantization


@pytest.fixture(scope="module")
def config():
    return load_testbed_config(CONFIG_PATH)


def _moving_state(ff):
    """Base drifting and turning, every joint away from zero and moving: nothing is trivially zero."""
    return make_state(ff, base_position=(0.3, -0.2, 0.0), base_yaw=0.7, base_linear_velocity=(0.05, -0.03, 0.0),
                      base_angular_velocity=(0.0, 0.0, 0.2), joint_positions=[0.4, -0.6, 0.3, 1.1, 2.0],
                      joint_velocities=[0.3, -0.2, 0.1, 0.4, 5.0])


def _momentum(emu) -> np.ndarray:
    return centroidal_momentum(emu.ff, emu.ff.create_data(), emu.state)


def _valve_timeline(emu, until: float) -> tuple[np.ndarray, np.ndarray]:
    """(step start times, valves open over each step) from emu.t to ``until``."""
    times, opened = [], []
    while emu.t < until - 1e-9:
        times.append(emu.t)
        opened.append(emu.valves_open())
        emu.advance(emu.t + PLANT_DT)
    return np.array(times), np.array(opened)


# --- capture -------------------------------------------------------------------------------------
def test_capture_round_trip_gives_true_base_pose(config):
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=PERFECT)
    tf = config.capture.transform
    for k in range(1, 21):
        emu.advance(k * 0.01)
        (sample,) = [s for s in emu.capture_samples(emu.t) if abs(s.stamp - emu.t) < 1e-9]
        p, R = tf.to_world(sample.position, sample.orientation_xyzw)
        q = emu.state.q
        # Two rigid transforms and a quaternion round trip: round-off only.
        np.testing.assert_allclose(p, base_position(emu.ff, q), atol=ROUND_OFF)
        np.testing.assert_allclose(R, base_rotation(emu.ff, q), atol=ROUND_OFF)
        # Non-trivial: y-up, so the marker body 12 cm above base_link reads capture y = 0.12.
        assert sample.position[1] == pytest.approx(0.12, abs=ROUND_OFF)
        assert sample.position[2] == pytest.approx(-q[1], abs=ROUND_OFF)


def test_wrong_axes_in_config_show_as_a_tilted_base(config):
    # The lab's capture is really z-up but its config says y-up: the bridge sees the base on its side.
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=EmulatorSettings(capture_axes="z-up"))
    (sample,) = emu.capture_samples(0.0)
    _, R = config.capture.transform.to_world(sample.position, sample.orientation_xyzw)
    assert tilt(R) == pytest.approx(math.pi / 2, abs=1e-9)


def test_capture_noise_is_deterministic_per_seed(config):
    settings = EmulatorSettings(capture_position_noise=5e-4, capture_attitude_noise=2e-3, capture_dropout_rate=0.2)
    runs = []
    for seed in (1, 1, 2):
        emu = TestbedEmulator(config, make_state(config.robot), settings=settings, seed=seed)
        emu.advance(0.3)
        runs.append(np.array([np.r_[s.stamp, s.position] for s in emu.capture_samples(0.3)]))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert runs[0].shape != runs[2].shape or not np.array_equal(runs[0], runs[2])
    assert 0 < len(runs[0]) < 31  # some of the 31 samples dropped


# --- encoders ------------------------------------------------------------------------------------
def test_encoders_invert_to_true_angles_without_quantization(config):
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=PERFECT)
    emu.advance(0.1)
    last = emu.encoder_samples(0.1)[-1]
    assert last.stamp == pytest.approx(0.1, abs=1e-9)
    assert last.names == ("shoulder", "elbow", "wrist_pitch", "wrist_roll", "reaction_wheel")
    sign = np.array([c.sign for c in config.encoders.channels])
    offset = np.array([c.offset for c in config.encoders.channels])
    np.testing.assert_allclose(sign * (last.positions - offset), joint_positions(emu.ff, emu.state.q), atol=ROUND_OFF)


def test_encoder_quantization_error_is_at_most_half_a_count(config):
    settings = EmulatorSettings(encoder_counts_per_rev=4096)
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=settings)
    sign = np.array([c.sign for c in config.encoders.channels])
    offset = np.array([c.offset for c in config.encoders.channels])
    half_count = math.pi / 4096
    errors = []
    for k in range(1, 51):
        emu.advance(k * 0.004)
        last = emu.encoder_samples(emu.t)[-1]
        errors.append(sign * (last.positions - offset) - joint_positions(emu.ff, emu.state.q))
    errors = np.abs(errors)
    assert errors.max() <= half_count + ROUND_OFF
    assert errors.max() > 0.5 * half_count  # quantization really happened (50 x 5 uniform errors)


def test_encoder_velocities_empty_when_estimated_and_signed_when_measured(config):
    assert config.encoders.velocities == "estimate"
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=PERFECT)
    assert all(s.velocities.size == 0 for s in emu.encoder_samples(0.0))

    measured = example_variant(**{"encoders.velocities": "measured"})
    emu = TestbedEmulator(measured, _moving_state(config.robot), settings=PERFECT)
    emu.advance(0.048)  # an encoder tick (250 Hz), so the last sample is the state now
    last = emu.encoder_samples(0.048)[-1]
    assert last.stamp == pytest.approx(0.048, abs=1e-9)
    sign = np.array([c.sign for c in config.encoders.channels])
    np.testing.assert_allclose(last.velocities, sign * emu.state.v[emu.ff.nb:], atol=ROUND_OFF)


# --- rates and latency ---------------------------------------------------------------------------
def test_sample_rates_and_latencies(config):
    settings = EmulatorSettings(capture_latency=0.008, encoder_latency=0.002)
    emu = TestbedEmulator(config, make_state(config.robot), settings=settings)
    with pytest.raises(ValueError, match="advance"):
        emu.capture_samples(0.1)  # samples stamped up to 0.092 s are not taken yet
    emu.advance(0.5)
    first = emu.capture_samples(0.5)
    # Stamps 0.00 ... 0.49 are due (0.49 + 0.008 <= 0.5); 0.50 is due at 0.508, not yet.
    assert [round(s.stamp, 9) for s in first] == [round(k * 0.01, 9) for k in range(50)]
    emu.advance(1.0)
    capture = first + emu.capture_samples(1.0)
    encoders = emu.encoder_samples(1.0)
    assert len(capture) == 100 and len(encoders) == 250  # 100 Hz and 250 Hz over [0, 1)
    np.testing.assert_allclose([s.delivery - s.stamp for s in capture], 0.008, atol=ROUND_OFF)
    np.testing.assert_allclose([s.delivery - s.stamp for s in encoders], 0.002, atol=ROUND_OFF)
    np.testing.assert_allclose(np.diff([s.stamp for s in capture]), 0.01, atol=ROUND_OFF)
    assert emu.capture_samples(1.0) == []  # delivered once, removed from the queue
    emu.advance(1.01)
    assert [round(s.stamp, 9) for s in emu.capture_samples(1.009)] == [1.0]


# --- valves --------------------------------------------------------------------------------------
def _x_pair(config) -> np.ndarray:
    """Duty vector index mask of t3 and t5: both push +x, their moments about base_link cancel."""
    return np.isin(config.actuators.thrusters.channels, ["t3", "t5"])


def test_duty_impulse_is_duty_times_period_times_max_force(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=PERFECT)
    duty = np.where(_x_pair(config), 0.3, 0.0)
    for k in range(3):
        emu.on_thruster_command(duty, k * 0.1)
        times, opened = _valve_timeline(emu, (k + 1) * 0.1)
        assert opened.sum(axis=0)[_x_pair(config)].tolist() == [30, 30]   # 0.3 * 0.1 s = 30 plant steps
        assert not opened[:, ~_x_pair(config)].any()
        assert times[opened[:, 1]].max() == pytest.approx(k * 0.1 + 0.029, abs=1e-9)
    force = 2 * config.robot.thruster_max_forces[0]  # 2 x 0.6 N
    impulse = 3 * 0.3 * 0.1 * force
    # On-times are quantized to the plant step (up to 1 ms x 1.2 N per pulse in general); here they
    # are whole steps, and t3 + t5 push through base_link without turning the base (checked), so the
    # impulse is exact to round-off.
    assert emu.state.q[3] == pytest.approx(0.0, abs=ROUND_OFF)  # sin(yaw)
    np.testing.assert_allclose(_momentum(emu)[:2], [impulse, 0.0], atol=ROUND_OFF)
    # The board does not repeat a period: a silent bridge leaves the valves shut.
    _, opened = _valve_timeline(emu, 0.5)
    assert not opened.any()


def test_valve_delay_and_command_latency_shift_the_pulse(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=EmulatorSettings(valve_delay=0.004,
                                                                                       command_latency=0.002))
    emu.on_thruster_command(np.where(_x_pair(config), 0.3, 0.0), 0.0)
    times, opened = _valve_timeline(emu, 0.1)
    on = times[opened[:, 1]]
    assert on.min() == pytest.approx(0.006, abs=1e-9) and on.max() == pytest.approx(0.035, abs=1e-9)
    assert len(on) == 30


def test_zero_command_mid_pulse_closes_after_the_delay(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=EmulatorSettings(valve_delay=0.004))
    emu.on_thruster_command(np.where(_x_pair(config), 0.5, 0.0), 0.0)
    emu.advance(0.01)
    emu.on_thruster_command(np.zeros(8), 0.01)
    _, opened = _valve_timeline(emu, 0.1)
    assert opened[:, 1].tolist() == [True] * 4 + [False] * 86  # open [0.004, 0.014): closes 4 ms after 0.01


def test_duty_below_min_on_time_opens_for_min_on_time(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=PERFECT)
    emu.on_thruster_command(np.where(_x_pair(config), 0.05, 0.0), 0.0)  # 5 ms < min_on_time 10 ms
    _, opened = _valve_timeline(emu, 0.1)
    assert opened[:, 1].sum() == 10


def test_bits_valves_follow_the_bits(config):
    bits = example_variant(**{"actuators.thrusters.command": "bits"})
    emu = TestbedEmulator(bits, make_state(config.robot), settings=PERFECT)
    pattern = np.zeros(8)
    pattern[[0, 4]] = 1  # t1 and t2
    emu.on_thruster_command(pattern, 0.0)
    emu.advance(0.2)  # bits hold with no timeout and no PWM period
    assert emu.valves_open().tolist() == pattern.astype(bool).tolist()
    emu.on_thruster_command(np.zeros(8), 0.2)
    assert not emu.valves_open().any()
    with pytest.raises(ValueError, match="0 or 1"):
        emu.on_thruster_command(np.full(8, 0.5), 0.2)


def test_bad_thruster_commands_are_refused(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=PERFECT)
    for bad, message in ((np.full(8, 1.2), r"\[0, 1\]"), (np.full(8, np.nan), "NaN"), (np.zeros(7), "8 values")):
        with pytest.raises(ValueError, match=message):
            emu.on_thruster_command(bad, 0.0)


# --- joint and wheel drivers ---------------------------------------------------------------------
def test_hardware_effort_sign_and_command_timeout(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=EmulatorSettings(command_latency=0.002))
    efforts = np.array([0.0, 0.5, 0.0, 0.0])  # elbow: joint2, sign -1
    emu.on_joint_efforts(efforts, 0.0)
    emu.advance(0.05)
    assert emu.actuation().arm_torques.tolist() == [0.0, -0.5, 0.0, 0.0]
    assert emu.state.v[emu.ff.joint_v_index("joint2")] < 0  # a positive hardware effort turns joint2 negatively
    emu.advance(0.101)  # arrived at 0.002 s: still held 0.1 s later
    assert emu.actuation().arm_torques[1] == -0.5
    emu.advance(0.103)  # older than command_timeout: the driver's watchdog zeroes it
    assert not emu.actuation().arm_torques.any()
    with pytest.raises(ValueError, match="4 values"):
        emu.on_joint_efforts(np.zeros(5), 0.1)


def test_wheel_speed_command_with_hardware_sign(config):
    speed = example_variant(**{"actuators.wheels.command": "speed"})
    emu = TestbedEmulator(speed, make_state(config.robot), settings=PERFECT)
    for k in range(10):  # resent within command_timeout
        emu.on_wheel_command([20.0], k * 0.05)
        emu.advance((k + 1) * 0.05)
    # Saturated at 0.5 N m for ~50 ms, then the 50 1/s loop for >= 0.4 s: the transient is gone
    # (e^-20 ~ 2e-9). What is left is the P loop's error under the base's angular acceleration as the
    # free arm drifts (w_cmd - w = dw_base/dt / gain, ~2e-4 rad/s^2 / 50 ~ 4e-6 rad/s): allow 1e-4.
    assert emu.state.v[emu.ff.joint_v_index("wheel_z_joint")] == pytest.approx(-20.0, abs=1e-4)  # sign -1
    emu.advance(0.7)  # timed out: the motor is disabled and the wheel coasts (no friction)
    assert emu.actuation().wheel_torques.tolist() == [0.0]


def test_arm_efforts_keep_linear_momentum_zero(config):
    emu = TestbedEmulator(config, make_state(config.robot, joint_positions=[0.4, -0.6, 0.3, 1.1, 0.0]),
                          settings=PERFECT)
    for k in range(250):  # 1 s of efforts at the bridge's 250 Hz
        t = k * 0.004
        emu.on_joint_efforts(0.5 * np.sin(2 * np.pi * np.array([1.0, 1.5, 2.0, 2.5]) * t), t)
        emu.advance(t + 0.004)
    assert np.linalg.norm(emu.state.v[emu.ff.arm_v_indices]) > 0.1  # the arm really moved
    # The plant's momentum projection keeps P at its initial zero to round-off (~1e-15 per step).
    assert np.linalg.norm(_momentum(emu)[:3]) < 1e-9


# --- faults --------------------------------------------------------------------------------------
def test_capture_dropout_window_has_no_samples(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=PERFECT,
                          faults=[Fault("capture_dropout", 0.2, 0.1)])
    emu.advance(0.5)
    stamps = np.array([s.stamp for s in emu.capture_samples(0.5)])
    assert not np.any((stamps > 0.2 - 1e-9) & (stamps < 0.3 - 1e-9))
    assert len(stamps) == 41  # 51 stamps in [0, 0.5], 10 lost; samples again from 0.3
    assert np.isclose(stamps, 0.19).any() and np.isclose(stamps, 0.3).any()


def test_capture_jump_offsets_the_reported_base(config):
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=PERFECT,
                          faults=[Fault("capture_jump", 0.1, 0.05, offset=(0.1, -0.05, 0.0))])
    tf = config.capture.transform
    emu.capture_samples(0.0)  # the t = 0 sample
    for k in range(1, 21):
        emu.advance(k * 0.01)
        (sample,) = emu.capture_samples(emu.t)
        expected = (0.1, -0.05, 0.0) if 0.1 - 1e-9 <= sample.stamp < 0.15 - 1e-9 else (0.0, 0.0, 0.0)
        p, _ = tf.to_world(sample.position, sample.orientation_xyzw)
        np.testing.assert_allclose(p - base_position(emu.ff, emu.state.q), expected, atol=ROUND_OFF)


def test_encoder_nan_only_at_the_joints_hardware_index(config):
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=PERFECT,
                          faults=[Fault("encoder_nan", 0.1, 0.05, joint="joint3")])
    emu.advance(0.3)
    for s in emu.encoder_samples(0.3):
        in_window = 0.1 - 1e-9 <= s.stamp < 0.15 - 1e-9
        assert np.isnan(s.positions).tolist() == [False, False, in_window, False, False]  # wrist_pitch
    with pytest.raises(ValueError, match="joint1"):
        emu.add_fault(Fault("encoder_nan", 0.0, 1.0, joint="wrist_pitch"))  # hardware name, not URDF
    with pytest.raises(ValueError, match="capture_dropout"):
        Fault("encoder_hang", 0.0, 1.0)


def test_encoder_freeze_republishes_the_last_message(config):
    emu = TestbedEmulator(config, _moving_state(config.robot), settings=PERFECT,
                          faults=[Fault("encoder_freeze", 0.1, 0.05)])
    emu.advance(0.3)
    samples = emu.encoder_samples(0.3)
    frozen = [s for s in samples if 0.1 - 1e-9 <= s.delivery < 0.15 - 1e-9]
    assert len(frozen) == 13  # ticks 0.100, 0.104, ..., 0.148 (250 Hz)
    for s in frozen:
        assert s.stamp == pytest.approx(0.096, abs=1e-9)  # the last tick before the hang
        np.testing.assert_array_equal(s.positions, frozen[0].positions)
    after = [s for s in samples if s.delivery >= 0.15 - 1e-9]
    assert after[0].stamp == pytest.approx(0.152, abs=1e-9) and not np.array_equal(after[0].positions,
                                                                                    frozen[0].positions)


def test_push_changes_base_momentum_by_force_times_duration(config):
    emu = TestbedEmulator(config, make_state(config.robot), settings=PERFECT,
                          faults=[Fault("push", 0.1, 0.2, offset=(2.0, -1.0, 0.0))])
    emu.advance(0.5)
    # Air bearing: no friction, so dP = F * 0.2 s. The force acts at base_link, off the system CoM,
    # so the base turns (yaw rate ~2e-3 rad/s), and the force, held in base axes over each 1 ms step,
    # lags its world direction by ~omega * dt / 2 ~ 1e-6 rad: ~1e-6 relative (5e-7 measured).
    np.testing.assert_allclose(_momentum(emu)[:2], [0.4, -0.2], atol=1e-5 * 0.45)



def test_push_beyond_the_ideal_base_limits_is_not_bounded_by_them(config):
    # A push is a disturbance, not the ideal base actuator: 20 N (12x planar_4link's 1.7 N ideal
    # bound) for 0.1 s gives the whole 2 N s (same tolerance as the test above, scaled).
    emu = TestbedEmulator(config, make_state(config.robot), settings=PERFECT,
                          faults=[Fault("push", 0.1, 0.1, offset=(20.0, 0.0, 0.0))])
    emu.advance(0.3)
    np.testing.assert_allclose(_momentum(emu)[:2], [2.0, 0.0], atol=1e-5 * 2.0)


def test_a_diverging_emulated_plant_holds_its_state_and_its_sensors_fall_silent(config):
    # Arm efforts at the joints' limits on a plant stepping at 10 Hz: it diverges at its first step.
    emu = TestbedEmulator(config, make_state(config.robot), settings=replace(PERFECT, plant_rate=10.0))
    ff = config.robot
    wire = [c for c in config.encoders.channels if c.joint in ff.arm_joint_names]  # the efforts' order
    emu.on_joint_efforts([c.effort_sign * ff.arm_effort_limits[ff.arm_joint_names.index(c.joint)] for c in wire], 0.0)
    emu.capture_samples(0.0)  # the samples taken at t = 0
    emu.encoder_samples(0.0)
    emu.advance(1.0)
    assert emu.diverged.startswith("plant diverged at t = 0.1 s: kinetic energy went from 0 J")
    assert emu.t == pytest.approx(1.0) and not emu.state.v.any()  # time goes on, the plant holds
    assert emu.capture_samples(1.0) == [] and emu.encoder_samples(1.0) == []

# --- settings ------------------------------------------------------------------------------------
def test_settings_from_bundled_config(config):
    emu = TestbedEmulator(config, make_state(config.robot))
    s = emu.settings
    assert (s.plant_rate, s.capture_latency, s.encoder_counts_per_rev, s.valve_delay, s.command_latency) == (
        1000.0, 0.008, 4096, 0.004, 0.002)
    assert s.command_timeout == 0.1  # default


@pytest.mark.parametrize("mapping, key", [
    ({"plant_rte": 1000.0}, "plant_rte"),
    ({"capture": {"latncy": 0.01}}, "latncy"),
    ({"capture": {"latency": -0.01}}, "emulator.capture.latency"),
    ({"valves": {"delay": float("nan")}}, "emulator.valves.delay"),
    ({"commands": {"timeout": 0.0}}, "emulator.commands.timeout"),
    ({"capture": {"dropout_rate": 1.5}}, "emulator.capture.dropout_rate"),
    ({"encoders": {"counts_per_rev": 4096.5}}, "emulator.encoders.counts_per_rev"),
    ({"capture": {"axes": "x-up"}}, "emulator.capture.axes"),
])
def test_settings_refuse_unknown_keys_and_bad_values(mapping, key):
    with pytest.raises(ConfigError, match=key):
        EmulatorSettings.from_mapping(mapping)
