"""The figures a run is judged by, from its recorded series, each robust to missing signals.

A run that stopped early, or one whose controller never started (a testbed whose motion
capture never arrived), has few or no samples of some signals, or only NaN where the
controller wrote nothing. Each figure is then ``None`` (``null`` in summary.json) and
``not_available[figure]`` says why; no figure raises, so the summary of such a run is still
written.

Series are those of :class:`~freeflyer_control.sim.result.Recorder` (first axis: samples).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pinocchio as pin

from freeflyer_control.physics.state import rotation_from_xyzw

NOT_AVAILABLE = "not available"


class Unavailable(Exception):
    """A figure cannot be computed from the series; the message says why."""


def _signal(series: Mapping[str, np.ndarray], key: str) -> np.ndarray:
    """``series[key]`` as (n, k) floats, all finite; Unavailable if absent, empty or not finite."""
    values = series.get(key)
    if values is None or len(values) == 0:
        raise Unavailable(f"no samples of {key}")
    values = np.asarray(values, dtype=float).reshape(len(values), -1)
    if not np.isfinite(values).all():
        raise Unavailable(f"non-finite samples of {key}")
    return values


def largest(values) -> float | None:
    """The largest finite value of ``values``, or None if there is none."""
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else None


def _smallest_sigma(s) -> float:
    """Smallest recorded sigma_min of the task GJM (NaN where none was computed)."""
    sigma = np.asarray(s.get("sigma_min", np.zeros((0, 1))), dtype=float)
    finite = sigma[np.isfinite(sigma)]
    if finite.size == 0:
        raise Unavailable("no sample of sigma_min")
    return float(finite.min())


def _attitude_change(s) -> float:
    """Largest rotation angle, rad, of the base from its first sampled attitude (world axes)."""
    quats = _signal(s, "base_orientation_xyzw")
    R0 = rotation_from_xyzw(quats[0])
    return float(max(np.linalg.norm(pin.log3(R0.T @ rotation_from_xyzw(q))) for q in quats))


def _displacement(s, key: str) -> float:
    """Largest distance, m, of a world position from its first sample."""
    p = _signal(s, key)
    return float(np.linalg.norm(p - p[0], axis=1).max())


def _tracking_error(s, ff, task_space: bool) -> np.ndarray:
    """Tracking error of every sample that has a reference: the worst end-effector's position
    error, m (task space), or the norm of the arm joints' angle error, rad (joint space)."""
    if task_space:
        pos, target = s.get("ee_positions"), s.get("ee_targets")
        if pos is None or target is None or np.asarray(pos).size == 0:
            raise Unavailable("no end-effector samples")
        d = (np.asarray(target, dtype=float) - np.asarray(pos, dtype=float)).reshape(len(pos), -1, 3)
        per_ee = np.linalg.norm(d, axis=2)
        rows = np.isfinite(per_ee).any(axis=1)
        err = np.nanmax(per_ee[rows], axis=1) if rows.any() else np.zeros(0)
    else:
        ref, q = s.get("arm_reference"), s.get("joint_positions")
        if ref is None or q is None or len(ref) == 0:
            raise Unavailable("no samples of arm_reference")
        arm = ff.arm_v_indices - ff.nb
        d = np.asarray(ref, dtype=float) - np.asarray(q, dtype=float)[:, arm]
        rows = np.isfinite(d).all(axis=1)
        err = np.linalg.norm(d[rows], axis=1)
    if err.size == 0:
        raise Unavailable("no sample has a reference: the controller never ran")
    return err


# Applied and commanded pairs of the Recorder, and the tolerance within which the two agree
# (relative to the command, plus an absolute floor): the allocator meets a feasible wrench to
# about 1e-12 of it, so anything larger is a saturated thruster, torque or ideal wrench.
SATURATION_PAIRS = (("arm_torques", "arm_torques_commanded"), ("wheel_torques", "wheel_torques_commanded"),
                    ("thruster_forces", "thruster_forces_commanded"), ("base_wrench_world", "base_wrench_commanded"))
SATURATION_TOLERANCE = 1e-6


def saturated_fraction(series: Mapping[str, np.ndarray]) -> float:
    """The fraction of the samples with a command the actuators did not apply in full (a torque,
    thruster force or ideal base wrench clipped at its limit), among those with a command."""
    flags, counted = None, None
    for applied_key, commanded_key in SATURATION_PAIRS:
        applied, commanded = series.get(applied_key), series.get(commanded_key)
        if commanded is None or applied is None or len(commanded) == 0 or len(applied) != len(commanded):
            raise Unavailable(f"no samples of {commanded_key}")
        applied = np.asarray(applied, dtype=float).reshape(len(applied), -1)
        commanded = np.asarray(commanded, dtype=float).reshape(len(commanded), -1)
        if flags is None:
            flags, counted = np.zeros(len(commanded), dtype=bool), np.ones(len(commanded), dtype=bool)
        if commanded.shape[1] == 0:
            continue
        finite = np.isfinite(commanded).all(axis=1) & np.isfinite(applied).all(axis=1)
        counted &= finite
        with np.errstate(invalid="ignore"):
            off = np.abs(applied - commanded) > SATURATION_TOLERANCE * (1.0 + np.abs(commanded))
        flags |= finite & off.any(axis=1)
    if counted is None or not counted.any():
        raise Unavailable("no sample has a command: the controller never ran")
    return float(flags[counted].mean())


def run_metrics(ff, series: Mapping[str, np.ndarray], task_space: bool) -> dict:
    """The summary figures of a run of robot ``ff`` (see the module docstring): momentum
    (world axes, angular about the system CoM), CoM drift, base attitude and position change,
    tracking error, arm torque as applied and as commanded, the fraction of samples with a
    saturated command, smallest singular value of the task GJM (task space only).

    Returns the figures, plus ``not_available``: {figure: why} for each figure that is None.
    """
    s = series
    missing: dict[str, str] = {}
    out: dict = {}

    def figure(name: str, compute: Callable[[], float]) -> None:
        try:
            out[name] = float(compute())
        except Unavailable as why:
            out[name] = None
            missing[name] = str(why)

    figure("max_abs_linear_momentum", lambda: np.abs(_signal(s, "momentum_total")[:, :3]).max())
    figure("max_abs_angular_momentum", lambda: np.abs(_signal(s, "momentum_total")[:, 3:]).max())
    figure("com_drift_m", lambda: _displacement(s, "com"))
    figure("base_attitude_change_rad", lambda: _attitude_change(s))
    figure("base_position_change_m", lambda: _displacement(s, "base_position"))
    try:
        err, why_no_err = _tracking_error(s, ff, task_space), ""
    except Unavailable as why:
        err, why_no_err = None, str(why)

    def tracked() -> np.ndarray:
        if err is None:
            raise Unavailable(why_no_err)
        return err

    figure("rms_tracking_error", lambda: np.sqrt(np.mean(tracked() ** 2)))
    figure("max_tracking_error", lambda: tracked().max())
    figure("final_tracking_error", lambda: tracked()[-1])
    out["tracking_error_units"] = "m (end-effector position)" if task_space else "rad (arm joint positions)"
    figure("max_abs_arm_torque_nm", lambda: np.abs(_signal(s, "arm_torques")).max(initial=0.0))
    figure("max_abs_arm_torque_commanded_nm", lambda: np.abs(_signal(s, "arm_torques_commanded")).max(initial=0.0))
    figure("saturated_fraction", lambda: saturated_fraction(s))
    if task_space:
        figure("min_sigma", lambda: _smallest_sigma(s))
    else:
        out["min_sigma"] = None  # not a figure of joint-space maneuvers
    out["not_available"] = missing
    return out


def contact_metrics(series: Mapping[str, np.ndarray], missing: dict[str, str]) -> dict:
    """Figures of a run with a wall (ee-contact), over the samples with a force setpoint > 0:
    RMS and final error of the contact force against its setpoint (N); the peak base reaction
    (the wrench the arm and wheels exert on the base, world axes, about the base_link origin:
    force N, torque N m); the largest change of the base velocity from its value when the
    press began (m/s, rad/s; world axes). Unavailable figures are None, with the reason added
    to ``missing``."""
    out: dict = {}
    names = ("contact_force_rms_error_n", "contact_force_final_error_n", "peak_base_reaction_force_n",
             "peak_base_reaction_torque_nm", "base_linear_velocity_change_m_s",
             "base_angular_velocity_change_rad_s")
    try:
        setpoint = _signal(series, "contact_force_setpoint")[:, 0]
        pressing = setpoint > 0
        if not pressing.any():
            raise Unavailable("the run ended before the press began")
        err = _signal(series, "contact_force_normal")[pressing, 0] - setpoint[pressing]
        reaction = _signal(series, "base_reaction")[pressing]
        lin = _signal(series, "base_linear_velocity")[pressing]
        ang = _signal(series, "base_angular_velocity")[pressing]
        values = (np.sqrt(np.mean(err ** 2)), abs(err[-1]), np.linalg.norm(reaction[:, :3], axis=1).max(),
                  np.linalg.norm(reaction[:, 3:], axis=1).max(), np.linalg.norm(lin - lin[0], axis=1).max(),
                  np.linalg.norm(ang - ang[0], axis=1).max())
        out.update({name: float(value) for name, value in zip(names, values)})
    except Unavailable as why:
        for name in names:
            out[name] = None
            missing[name] = str(why)
    return out
