"""Capture campaigns: a spec with ``maneuver: capture`` and an ``object`` flies sim.capture runs.

Run keys (as ``freeflyer sim --maneuver capture``): robot, object, mode, approach,
bias_momentum, one_arm, rate, duration, log_rate, base_actuation. The dispersions are the
target's (``where: capture`` in campaign.dispersions.KINDS): its spin rate and axis, its mass and
principal inertia (the truth; the controller believes the config's), and the noise of its
measurement; the robot's own dispersions belong to the joint-maneuver runs and are refused here.
A run that never closes its first grasp, or never comes to rest, has NaN for those metrics and
fails every criterion on them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

CAPTURE_KEYS = {"robot", "object", "mode", "approach", "bias_momentum", "one_arm", "rate", "duration",
                "log_rate", "base_actuation", "maneuver"}
# The summary figures a capture run is judged by (sim.capture's summary keys).
CAPTURE_METRICS = ("capture_time_s", "second_grasp_time_s", "time_to_rest_s", "fuel_N_s", "peak_wheel_momentum_Nms",
                   "final_wheel_momentum_Nms", "peak_arm_torque_Nm", "peak_grasp_force_N", "peak_grasp_torque_Nm",
                   "approach_base_attitude_change_rad", "base_angular_velocity_after_impact_rad_s",
                   "final_base_angular_velocity_rad_s", "max_grasp_constraint_error_m",
                   "max_grasp_constraint_rotation_error_rad")
# Noise kinds -> sim.capture.CaptureConfig.sensor_noise keys.
NOISE = {"target_position_noise": "position", "target_attitude_noise": "attitude",
         "target_velocity_noise": "velocity", "target_rate_noise": "rate"}


def is_capture(raw: Mapping) -> bool:
    return raw.get("maneuver") == "capture"


def capture_config(raw: Mapping):
    """The CaptureConfig of the spec's run keys (no dispersion), checked as ``freeflyer sim`` checks
    them; ValueError with the key otherwise."""
    from freeflyer_control.sim.capture import CaptureConfig

    if not isinstance(raw.get("object"), str):
        raise ValueError("campaign spec: a capture campaign needs object: NAME|PATH (e.g. object: planar_target)")
    kwargs = {"obj": raw["object"]}
    for key in ("robot", "mode", "approach", "base_actuation"):
        if key in raw:
            if not isinstance(raw[key], str):
                raise ValueError(f"campaign spec: {key} must be a name, got {raw[key]!r}")
            kwargs[key] = raw[key]
    for key in ("rate", "duration", "log_rate"):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"campaign spec: {key} must be a positive number, got {value!r}")
            kwargs[key] = float(value)
    for key, attr in (("bias_momentum", "bias"), ("one_arm", "both_arms")):
        if key in raw:
            if not isinstance(raw[key], bool):
                raise ValueError(f"campaign spec: {key} is true or false, got {raw[key]!r}")
            kwargs[attr] = raw[key] if key == "bias_momentum" else not raw[key]
    return CaptureConfig(**kwargs)


def check(raw: Mapping):
    """(CaptureConfig, robot) of a capture spec, everything refused that ``freeflyer sim`` refuses."""
    from freeflyer_control.control.capture_mission import options_problem
    from freeflyer_control.sim.capture import initial_states

    config = capture_config(raw)
    ff, *_ = initial_states(config)
    problem = options_problem(ff, config.options())
    if problem:
        raise ValueError(f"campaign spec: {problem}")
    return config, ff


def dispersed(config, values: dict, seed: int):
    """``config`` with run's drawn ``values`` (campaign.dispersions' capture kinds) applied."""
    from dataclasses import replace


    axes = "xyz"
    inertia = values.get("target_inertia_error") or {}
    tilt = values.get("target_spin_axis") or {}
    noise = {key: float(values[kind]) for kind, key in NOISE.items() if kind in values}
    return replace(config,
                   target_spin_scale=1.0 + float(values.get("target_spin_scale") or 0.0),
                   target_spin_tilt=tuple(float(tilt.get(a, 0.0)) for a in axes),
                   target_mass_scale=1.0 + float(values.get("target_mass_error") or 0.0),
                   target_inertia_scale=tuple(float(1.0 + inertia.get(a, 0.0)) for a in axes),
                   sensor_noise=noise, seed=int(seed))


def simulate(spec, run: int, *, progress=None, stream=None):
    """Fly run ``run`` of a capture campaign; its ObjectSimResult."""
    from freeflyer_control.sim.capture import run_capture

    config = dispersed(capture_config(spec.raw), spec.draw(run), spec.run_seed(run))
    return run_capture(config, progress, stream=stream)
