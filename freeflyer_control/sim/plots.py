"""Plots of a simulation run, in the manner of Wilde et al. (2018), Figs. 5-8.

=====================  =====================================================================
file                   what it shows
=====================  =====================================================================
``joint_rates.png``    arm joint rates (solid; references dashed) and the base angular
                       velocity (planar wz; spatial wx, wy, wz) on one time axis, rad/s
``joint_angles.png``   arm joint angles (references dashed) and the base attitude change,
                       rad; below, the base_link origin's displacement from its start, mm
``momentum.png``       linear (kg m/s) and angular (kg m^2/s, about the system CoM) momentum
                       of the base (with its wheels), the arm(s) and the whole system; planar:
                       Px, Py and Lz only
``system_com.png``     displacement of the system CoM (top) and of the base CoM (bottom) from
                       their start, mm, on one shared symmetric scale of at least +-1 mm, with
                       the largest displacement written out, so that a 1e-15 m drift reads as
                       the flat line it is
``ee_tracking.png``    task-space maneuvers: end-effector path vs target in the plane the
                       target moves in most, and the position error over time, mm
``singularity.png``    task-space maneuvers (when recorded): sigma_min of the commanded task rows
                       of the GJM over time, with the threshold where resolved rate damps
``contact_force.png``  ee-contact: the contact force into the wall against its setpoint, N;
                       below, the base reaction (force N, torque N m) over time
=====================  =====================================================================

Mode switches are vertical lines (dashed: accepted, labelled with the new mode; dotted: refused)
on every time plot. Importing this module needs no display and no matplotlib: matplotlib is
imported, with the Agg backend, inside :func:`write_plots`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from freeflyer_control.control.resolved_rate import ResolvedRateGains
from freeflyer_control.physics.modes import Mode

DPI = 110
# The smallest half-range, m, of the CoM plot's y-axis: smaller motion is drawn at this scale.
COM_MIN_HALF_RANGE_M = 1e-3
# The same for momentum plots (kg m/s, kg m^2/s): numerical noise is not blown up to fill the axes.
MOMENTUM_MIN_HALF_RANGE = 1e-9
# Every file write_plots may write (the module docstring's table).
PLOT_FILES = ("joint_rates.png", "joint_angles.png", "momentum.png", "system_com.png",
              "ee_tracking.png", "singularity.png", "contact_force.png")


def matplotlib_missing() -> str | None:
    """None if matplotlib can be imported (plots can be written), else why not.

    Asked before a run, so that a missing plotting library is said up front, not after the
    simulation; importing the package (not pyplot) is cheap and is what a missing install fails on.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------------------------
# data helpers


def _time(result) -> np.ndarray:
    return np.asarray(result.series["t"], dtype=float).reshape(-1)


def _cols(result, key: str, labels) -> np.ndarray:
    """Columns ``labels`` of series ``key`` (n, len(labels))."""
    names = list(result.column_names[key])
    data = np.asarray(result.series[key], dtype=float).reshape(len(_time(result)), -1)
    return data[:, [names.index(label) for label in labels]]


def _arm_names(result) -> list[str]:
    return list(result.robot.arm_joint_names)


def _spatial(result) -> bool:
    return result.robot.base != "planar"


def _mode_switches(result) -> list[tuple[float, str, bool]]:
    """(t, new mode, accepted) of every mode request; from the summary, else from the series."""
    history = result.summary.get("mode_switches") if isinstance(result.summary, dict) else None
    if history:
        return [(float(h["t"]), str(h["to"]), bool(h.get("accepted", True))) for h in history]
    modes = list(Mode)
    idx = np.asarray(result.series["mode"]).reshape(-1).astype(int)
    t = _time(result)
    return [(float(t[k]), modes[idx[k]].value, True) for k in range(1, idx.size) if idx[k] != idx[k - 1]]


def _mode_sequence(result) -> str:
    modes = list(Mode)
    seq: list[str] = []
    for i in np.asarray(result.series["mode"]).reshape(-1).astype(int):
        if not seq or seq[-1] != modes[i].value:
            seq.append(modes[i].value)
    return " \u2192 ".join(seq) if seq else str(result.summary.get("mode", "?"))


def _title(result, what: str) -> str:
    s = result.summary if isinstance(result.summary, dict) else {}
    controller = s.get("controller", getattr(result.config, "controller", "?"))
    maneuver = s.get("maneuver", getattr(result.config, "maneuver", "?"))
    return (f"{what}\n{result.robot.name} ({result.robot.base} base) | mode: {_mode_sequence(result)} | "
            f"controller: {controller} | maneuver: {maneuver}")


def _base_attitude_change(result) -> tuple[np.ndarray, list[str]]:
    """Base attitude relative to the start: planar yaw (n, 1); spatial rotation vector of
    R(t) R(0)^T in world axes (n, 3). rad."""
    from scipy.spatial.transform import Rotation

    quat_xyzw = _cols(result, "base_orientation_xyzw", ["qx", "qy", "qz", "qw"])
    rot = Rotation.from_quat(quat_xyzw)  # scipy's order is (x, y, z, w)
    rotvec = (rot * rot[0].inv()).as_rotvec()
    if not _spatial(result):
        return np.unwrap(rotvec[:, 2:3], axis=0), ["base yaw"]
    return rotvec, ["base \u03b8x", "base \u03b8y", "base \u03b8z"]


def _base_com_offset(result) -> np.ndarray:
    """CoM of the base (with its wheels) in base_link axes, relative to the base_link origin, m."""
    model = result.robot.model
    ids = [1] + [j for j in range(2, model.njoints)
                 if model.names[j] in set(result.robot.wheel_joint_names) and model.parents[j] == 1]
    mass, moment = 0.0, np.zeros(3)
    for j in ids:
        inertia = model.inertias[j]
        c = np.asarray(inertia.lever, dtype=float)
        if j != 1:
            c = np.asarray(model.jointPlacements[j].act(c), dtype=float)
        mass += float(inertia.mass)
        moment += float(inertia.mass) * c
    return moment / mass if mass > 0 else np.zeros(3)


def _base_com(result) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    p = _cols(result, "base_position", ["x", "y", "z"])
    R = Rotation.from_quat(_cols(result, "base_orientation_xyzw", ["qx", "qy", "qz", "qw"]))
    return p + R.apply(_base_com_offset(result))


# --------------------------------------------------------------------------------------------
# drawing helpers


def _mark_switches(axes, switches, label: bool = True) -> None:
    for t, mode, accepted in switches:
        for i, ax in enumerate(axes):
            ax.axvline(t, color="0.25", lw=1.0, ls="--" if accepted else ":", alpha=0.8, zorder=1)
            if label and i == 0:
                text = f"\u2192 {mode}" if accepted else f"{mode} refused"
                ax.text(t, 0.98, text + " ", transform=ax.get_xaxis_transform(), rotation=90,
                        ha="right", va="top", fontsize=8, color="0.2")


def _text_box(ax, text: str, loc: str = "lower right") -> None:
    x, ha = (0.99, "right") if "right" in loc else (0.01, "left")
    y, va = (0.02, "bottom") if "lower" in loc else (0.98, "top")
    ax.text(x, y, text, transform=ax.transAxes, ha=ha, va=va, fontsize=8,
            bbox=dict(boxstyle="round", fc="white", ec="0.6", alpha=0.85))


def _symmetric_floor(ax, data: np.ndarray, floor: float) -> None:
    """Keep the y-axis at least +-floor around zero, so tiny values stay visibly tiny."""
    finite = np.asarray(data, dtype=float)
    finite = finite[np.isfinite(finite)]
    peak = float(np.abs(finite).max()) if finite.size else 0.0
    if peak < floor:
        ax.set_ylim(-floor, floor)
    else:
        lo, hi = ax.get_ylim()
        ax.set_ylim(min(lo, -floor), max(hi, floor))


def _finish(fig, ax_list, path: Path, plt) -> Path:
    for ax in ax_list:
        ax.grid(True, alpha=0.3)
        ax.ticklabel_format(axis="y", useOffset=False)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _legend(ax, **kw) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0.0, **kw)


# --------------------------------------------------------------------------------------------
# the plots


def _plot_joint_rates(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    arm = _arm_names(result)
    qd = _cols(result, "joint_velocities", arm)
    ref = _cols(result, "arm_reference_rate", arm)
    w = _cols(result, "base_angular_velocity", ["x", "y", "z"])
    fig, ax = plt.subplots(figsize=(10, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, name in enumerate(arm):
        c = colors[i % len(colors)]
        ax.plot(t, qd[:, i], color=c, lw=1.5, label=f"{name} rate")
        ax.plot(t, ref[:, i], color=c, lw=1.0, ls="--", alpha=0.8)
    ax.plot([], [], color="0.4", ls="--", lw=1.0, label="reference rates")
    if _spatial(result):
        for j, (axis, ls) in enumerate(zip("xyz", ("-.", ":", "-"))):
            ax.plot(t, w[:, j], color="k", lw=2.0, ls=ls, label=f"base \u03c9{axis}")
        w_used = w
    else:
        ax.plot(t, w[:, 2], color="k", lw=2.0, label="base \u03c9z")
        w_used = w[:, 2:3]
    _mark_switches([ax], switches)
    peak_q = float(np.nanmax(np.abs(qd))) if qd.size else 0.0
    peak_w = float(np.nanmax(np.abs(w_used))) if w_used.size else 0.0
    _text_box(ax, f"peak |joint rate| = {peak_q:.4g} rad/s\npeak |base \u03c9| = {peak_w:.4g} rad/s")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("angular rate (rad/s)")
    ax.set_title(_title(result, "Arm joint rates and base angular velocity"), fontsize=10)
    _legend(ax)
    return _finish(fig, [ax], out / "joint_rates.png", plt)


def _plot_joint_angles(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    arm = _arm_names(result)
    q = _cols(result, "joint_positions", arm)
    ref = _cols(result, "arm_reference", arm)
    att, att_labels = _base_attitude_change(result)
    p = _cols(result, "base_position", ["x", "y", "z"])
    dp_mm = (p - p[0]) * 1e3
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, name in enumerate(arm):
        c = colors[i % len(colors)]
        ax1.plot(t, q[:, i], color=c, lw=1.5, label=name)
        ax1.plot(t, ref[:, i], color=c, lw=1.0, ls="--", alpha=0.8)
    ax1.plot([], [], color="0.4", ls="--", lw=1.0, label="references")
    styles = ("-",) if len(att_labels) == 1 else ("-.", ":", "-")
    for j, (label, ls) in enumerate(zip(att_labels, styles)):
        ax1.plot(t, att[:, j], color="k", lw=2.0, ls=ls, label=f"{label} (change)")
    ax1.set_ylabel("angle (rad)")
    ax1.set_title(_title(result, "Arm joint angles, base attitude and base position"), fontsize=10)
    axes_xyz = "xyz" if _spatial(result) else "xy"
    for j, axis in enumerate(axes_xyz):
        ax2.plot(t, dp_mm[:, j], lw=1.5, label=f"base {axis} \u2212 {axis}(0)")
    peak = float(np.abs(dp_mm[:, :len(axes_xyz)]).max()) if dp_mm.size else 0.0
    _symmetric_floor(ax2, dp_mm[:, :len(axes_xyz)], COM_MIN_HALF_RANGE_M * 1e3)
    _text_box(ax2, f"max |base displacement component| = {peak:.4g} mm")
    ax2.set_ylabel("base_link origin displacement (mm)")
    ax2.set_xlabel("time (s)")
    _mark_switches([ax1, ax2], switches)
    _legend(ax1)
    _legend(ax2)
    return _finish(fig, [ax1, ax2], out / "joint_angles.png", plt)


def _plot_momentum(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    lin, ang = (["Px", "Py", "Pz"], ["Lx", "Ly", "Lz"]) if _spatial(result) else (["Px", "Py"], ["Lz"])
    groups = (("base", "-", 1.6), ("arm", "--", 1.6), ("total", ":", 2.6))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, comps, unit, kind in ((ax1, lin, "kg m/s", "linear momentum"),
                                  (ax2, ang, "kg m\u00b2/s", "angular momentum (about the system CoM)")):
        all_values = []
        for ci, comp in enumerate(comps):
            for group, ls, lw in groups:
                values = _cols(result, f"momentum_{group}", [comp])[:, 0]
                all_values.append(values)
                ax.plot(t, values, color=colors[ci % len(colors)], ls=ls, lw=lw, label=f"{group} {comp}")
        total = np.abs(_cols(result, "momentum_total", comps)).max() if t.size else 0.0
        _symmetric_floor(ax, np.concatenate(all_values), MOMENTUM_MIN_HALF_RANGE)
        _text_box(ax, f"max |total {', '.join(comps)}| = {total:.3g} {unit}")
        ax.set_ylabel(f"{kind}\n({unit})")
        _legend(ax, ncol=1)
    ax1.set_title(_title(result, "Momentum of base, arm and system (world axes)"), fontsize=10)
    ax2.set_xlabel("time (s)")
    _mark_switches([ax1, ax2], switches)
    return _finish(fig, [ax1, ax2], out / "momentum.png", plt)


def _plot_system_com(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    axes_xyz = "xyz" if _spatial(result) else "xy"
    com = _cols(result, "com", list(axes_xyz))
    base_com = _base_com(result)[:, :len(axes_xyz)]
    d_sys = com - com[0]
    d_base = base_com - base_com[0]
    peak_sys = float(np.linalg.norm(d_sys, axis=1).max()) if t.size else 0.0
    peak_base = float(np.linalg.norm(d_base, axis=1).max()) if t.size else 0.0
    half = max(COM_MIN_HALF_RANGE_M, 1.1 * float(np.abs(np.concatenate([d_sys, d_base])).max()))
    offset = _base_com_offset(result)
    same_as_origin = bool(np.allclose(offset, 0.0, atol=1e-12))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True, sharey=True)
    for j, axis in enumerate(axes_xyz):
        ax1.plot(t, d_sys[:, j] * 1e3, lw=1.5, label=f"system CoM {axis}")
        ax2.plot(t, d_base[:, j] * 1e3, lw=1.5, label=f"base CoM {axis}")
    ax1.set_ylim(-half * 1e3, half * 1e3)
    _text_box(ax1, f"max |system CoM displacement| = {peak_sys:.3g} m")
    _text_box(ax2, f"max |base CoM displacement| = {peak_base:.3g} m"
                   + ("\n(base CoM = base_link origin)" if same_as_origin else ""))
    ax1.set_ylabel("system CoM \u2212 start (mm)")
    ax2.set_ylabel("base CoM \u2212 start (mm)")
    ax2.set_xlabel("time (s)")
    ax1.set_title(_title(result, "System CoM and base CoM displacement (world axes, same scale)"), fontsize=10)
    _mark_switches([ax1, ax2], switches)
    _legend(ax1)
    _legend(ax2)
    return _finish(fig, [ax1, ax2], out / "system_com.png", plt)


def _plot_ee_tracking(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    ees = list(result.robot.end_effectors)
    pos = np.asarray(result.series["ee_positions"], dtype=float).reshape(t.size, -1, 3)
    tgt = np.asarray(result.series["ee_targets"], dtype=float).reshape(t.size, -1, 3)
    if _spatial(result):
        finite = tgt[np.isfinite(tgt).all(axis=2)]
        span = np.ptp(finite, axis=0) if finite.size else np.zeros(3)
        a, b = sorted(np.argsort(-span, kind="stable")[:2])
    else:
        a, b = 0, 1
    names = "xyz"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw=dict(width_ratios=(1, 1.3)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    peaks = []
    for i, ee in enumerate(ees):
        if not np.isfinite(tgt[:, i]).any():
            continue
        c = colors[i % len(colors)]
        ax1.plot(pos[:, i, a], pos[:, i, b], color=c, lw=1.6, label=f"{ee} path")
        ax1.plot(tgt[:, i, a], tgt[:, i, b], color=c, lw=1.0, ls="--", label=f"{ee} target")
        ax1.plot(pos[0, i, a], pos[0, i, b], "o", color=c, ms=5)
        ax1.plot(pos[-1, i, a], pos[-1, i, b], "s", color=c, ms=5)
        err_mm = np.linalg.norm(pos[:, i] - tgt[:, i], axis=1) * 1e3
        peaks.append(f"{ee}: max {np.nanmax(err_mm):.3g} mm, final {err_mm[-1]:.3g} mm")
        ax2.plot(t, err_mm, color=c, lw=1.5, label=ee)
    ax1.set_aspect("equal", adjustable="datalim")
    ax1.set_xlabel(f"{names[a]} (m)")
    ax1.set_ylabel(f"{names[b]} (m)")
    ax1.set_title(f"end-effector path in the {names[a]}{names[b]} plane\n(o start, \u25a1 end)", fontsize=9)
    ax1.legend(fontsize=8, loc="best")
    ax2.set_xlabel("time (s)")
    ax2.set_ylabel("position error |p \u2212 p_target| (mm)")
    ax2.set_ylim(bottom=0.0)
    if peaks:
        _text_box(ax2, "\n".join(peaks), loc="upper right")
    _mark_switches([ax2], switches)
    _legend(ax2)
    fig.suptitle(_title(result, "End-effector tracking (world frame)"), fontsize=10)
    ax1.grid(True, alpha=0.3)
    return _finish(fig, [ax2], out / "ee_tracking.png", plt)


def _plot_singularity(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    sigma = np.asarray(result.series["sigma_min"], dtype=float).reshape(-1)
    sigma_0 = ResolvedRateGains().sigma_0  # the gains freeflyer sim runs with
    fig, ax = plt.subplots(figsize=(10, 4.5))
    # The rows the controller commands: a position-only target's translational block, else all
    # of them; the damping follows exactly this measure (control/resolved_rate.py).
    ax.plot(t, sigma, color="C3", lw=1.6, label="\u03c3_min of the commanded task rows of the GJM")
    ax.axhline(sigma_0, color="0.4", ls="--", lw=1.0, label=f"damping starts below \u03c3_0 = {sigma_0:g}")
    k = int(np.nanargmin(sigma))
    ax.plot(t[k], sigma[k], "v", color="C3")
    _text_box(ax, f"min \u03c3_min = {sigma[k]:.4g} at t = {t[k]:.3g} s", loc="upper right")
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("\u03c3_min (task rows; m/rad on position rows)")
    ax.set_title(_title(result, "Distance to dynamic singularity"), fontsize=10)
    _mark_switches([ax], switches)
    _legend(ax)
    return _finish(fig, [ax], out / "singularity.png", plt)


def _plot_contact(result, out: Path, plt, switches) -> Path:
    t = _time(result)
    force = np.asarray(result.series["contact_force_normal"], dtype=float).reshape(-1)
    setpoint = np.asarray(result.series["contact_force_setpoint"], dtype=float).reshape(-1)
    reaction = np.asarray(result.series["base_reaction"], dtype=float).reshape(t.size, 6)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    ax1.plot(t, force, color="C0", lw=1.6, label="contact force (into the wall)")
    ax1.plot(t, setpoint, color="0.3", lw=1.0, ls="--", label="setpoint")
    pressing = setpoint > 0
    if pressing.any():
        err = force[pressing] - setpoint[pressing]
        _text_box(ax1, f"RMS error {np.sqrt(np.mean(err ** 2)):.3g} N, final {abs(err[-1]):.3g} N",
                  loc="lower right")
    ax1.set_ylabel("force (N)")
    ax1.set_title(_title(result, "Contact force against its setpoint, and the base reaction"), fontsize=10)
    _legend(ax1)
    ax2.plot(t, np.linalg.norm(reaction[:, :3], axis=1), color="C1", lw=1.4, label="|force| on the base (N)")
    ax2.plot(t, np.linalg.norm(reaction[:, 3:], axis=1), color="C2", lw=1.4,
             label="|torque| on the base (N m, about base_link)")
    ax2.set_xlabel("time (s)")
    ax2.set_ylabel("base reaction")
    _legend(ax2)
    _mark_switches([ax1, ax2], switches)
    return _finish(fig, [ax1, ax2], out / "contact_force.png", plt)


def write_plots(result, out_dir) -> list[Path]:
    """Write the plots of ``result`` (see the module docstring) into ``out_dir``; their paths.

    ``ee_tracking.png`` only for runs with end-effector targets; ``singularity.png`` only when
    sigma_min was recorded (task-space runs); ``contact_force.png`` only for runs with a wall
    (ee-contact).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    switches = _mode_switches(result)
    paths = [
        _plot_joint_rates(result, out, plt, switches),
        _plot_joint_angles(result, out, plt, switches),
        _plot_momentum(result, out, plt, switches),
        _plot_system_com(result, out, plt, switches),
    ]
    targets = result.series.get("ee_targets")
    if targets is not None and np.asarray(targets).size and np.isfinite(targets).any():
        paths.append(_plot_ee_tracking(result, out, plt, switches))
    sigma = result.series.get("sigma_min")
    if sigma is not None and np.asarray(sigma).size and np.isfinite(sigma).any():
        paths.append(_plot_singularity(result, out, plt, switches))
    if "contact_force_normal" in result.series and len(result.series["contact_force_normal"]):
        paths.append(_plot_contact(result, out, plt, switches))
    return paths
