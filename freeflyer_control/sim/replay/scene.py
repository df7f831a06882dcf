"""What the replay shows, computed from a finished run's records (never simulated again).

:func:`build_scene` turns :class:`~freeflyer_control.sim.run_record.RunRecords` into the page's
data: the frames kept (:func:`frame_stride`), every link's placement at each (Pinocchio's forward
kinematics of the recorded base pose and joint positions), the URDF visuals, and the overlays the
run recorded: base trail, system CoM, end-effector paths and targets, thruster forces, the held or
captured object and its grasp frames, the mode in force. Arrays travel as little-endian float32
(deflated, base64): what a browser's typed arrays read without parsing.
"""

from __future__ import annotations

import base64
import math
import zlib
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.robots import urdf_path
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import make_state
from freeflyer_control.sim.run_record import RunRecords

from .visuals import Visual, urdf_visuals

# A browser draws a few dozen link poses per frame at 60 Hz without effort; what limits a long
# replay is the data the page holds. 30 frames per simulated second is smooth at 1x, and 6000
# frames (2 MB of poses for a 10-link robot) keep a one-hour run loading in seconds.
MAX_FPS = 30.0
MAX_FRAMES = 6000


@dataclass
class Decimation:
    """Which log samples become frames: every ``stride``-th from the first, and the last.

    Attributes:
        indices: the samples kept.
        log_rate: the log's samples per simulated second.
        fps: frames per simulated second of the replay.
    """

    indices: np.ndarray
    log_rate: float
    fps: float

    @property
    def stride(self) -> int:
        return int(self.indices[1] - self.indices[0]) if self.indices.size > 1 else 1


def frame_stride(t: np.ndarray, max_fps: float = MAX_FPS, max_frames: int = MAX_FRAMES) -> Decimation:
    """The frames of a replay of samples at times ``t`` (s): at most ``max_fps`` per simulated
    second and ``max_frames`` in all, evenly strided, the last sample always kept."""
    n = t.size
    if n < 2:
        return Decimation(np.arange(n), 0.0, 0.0)
    dt = float(np.median(np.diff(t)))
    log_rate = 1.0 / dt if dt > 0 else 0.0
    stride = max(1, round(log_rate / max_fps) if log_rate else 1, math.ceil(n / max_frames))
    indices = np.arange(0, n, stride)
    if indices[-1] != n - 1:
        indices = np.append(indices, n - 1)
    return Decimation(indices, log_rate, log_rate / stride)


def pack(values) -> str:
    """float32 little-endian bytes of ``values`` (any shape, C order), zlib-deflated (what the
    browsers' DecompressionStream("deflate") reads; poses shrink to about 40 %), base64."""
    raw = np.ascontiguousarray(values, dtype="<f4").tobytes()
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def unpack(text: str) -> np.ndarray:
    """The float32 values :func:`pack` packed, flat."""
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype="<f4")


def _visual_json(v: Visual, link_index: int) -> dict:
    out = {"link": link_index, "shape": v.shape, "matrix": v.placement.T.reshape(-1).tolist(),  # column-major
           "rgba": list(v.rgba)}
    if v.shape == "box":
        out["size"] = list(v.size)
    elif v.shape == "cylinder":
        out.update(radius=v.radius, length=v.length)
    elif v.shape == "sphere":
        out["radius"] = v.radius
    else:
        data = v.mesh_path.read_bytes()
        out.update(format=v.mesh_format, scale=list(v.scale),
                   data=base64.b64encode(data).decode("ascii") if v.mesh_format == "stl" else data.decode("utf-8", "replace"))
    return out


def _robot_states(ff, records: RunRecords, rows: np.ndarray):
    """Configuration q of every kept sample; a sample whose pose is not finite keeps the last
    finite one (a run stopped mid-sample, or signals not yet measured)."""
    base_p = records.series["base_position"][rows]
    base_q = records.series["base_orientation_xyzw"][rows]
    joints = records.series["joint_positions"]
    labels = records.columns["joint_positions"]
    order = [labels.index(name) for name in ff.joint_names]
    qs, last = [], make_state(ff).q
    for k, row in enumerate(rows):
        angles = joints[row, order]
        if np.isfinite(base_p[k]).all() and np.isfinite(base_q[k]).all() and np.isfinite(angles).all():
            position = base_p[k].copy()
            if ff.base == "planar":
                position[2] = 0.0
            last = make_state(ff, base_position=position, base_orientation_xyzw=base_q[k] / np.linalg.norm(base_q[k]),
                              joint_positions=angles).q
        qs.append(last)
    return qs


def link_poses(ff, qs, links: list[str]) -> np.ndarray:
    """(frames, links, 7): each link's origin (m) and orientation (x, y, z, w) in world."""
    data = ff.create_data()
    ids = [ff.model.getFrameId(name, pin.BODY) for name in links]
    out = np.empty((len(qs), len(links), 7))
    for k, q in enumerate(qs):
        pin.framesForwardKinematics(ff.model, data, q)
        for j, fid in enumerate(ids):
            placement = data.oMf[fid]
            out[k, j, :3] = placement.translation
            out[k, j, 3:] = pin.Quaternion(placement.rotation).coeffs()
    return out


def _optional(records: RunRecords, name: str, rows: np.ndarray) -> np.ndarray | None:
    values = records.get(name)
    return None if values is None else values[rows]


def _modes(records: RunRecords, rows: np.ndarray) -> tuple[list[str], list[int]]:
    names = [m.value for m in Mode]
    if records.modes:
        return names, [names.index(records.modes[i]) if records.modes[i] in names else 0 for i in rows]
    mode = records.summary.get("mode") or records.run.get("options", {}).get("mode") or Mode.FLOATING.value
    return names, [names.index(mode) if mode in names else 0] * rows.size


def _thrusters(records: RunRecords, rows: np.ndarray) -> dict | None:
    layout = records.run.get("thrusters") or []
    forces = _optional(records, "thruster_forces", rows)
    if not layout or forces is None or forces.shape[1] != len(layout):
        return None
    return {"names": [t["name"] for t in layout], "positions": [t["position"] for t in layout],
            "directions": [t["direction"] for t in layout], "max_force": [t["max_force"] for t in layout],
            "forces": pack(np.nan_to_num(forces))}


def _object(records: RunRecords, rows: np.ndarray) -> dict | None:
    obj = records.load_object()
    position = _optional(records, "object_position", rows)
    orientation = _optional(records, "object_orientation_xyzw", rows)
    if obj is None or position is None or orientation is None:
        return None
    grasps = [{"name": g.end_effector, "matrix": g.placement.homogeneous.T.reshape(-1).tolist()} for g in obj.grasps]
    return {"name": obj.name, "size": [float(x) for x in obj.size], "poses": pack(np.hstack([position, orientation])),
            "grasps": grasps, "free": bool(records.run["object"].get("free")),
            "captured": pack(records.series["phase"][rows, 0]) if records.get("phase") is not None else None}


def _title(records: RunRecords) -> str:
    s, run = records.summary, records.run
    robot = s.get("robot") or run["robot"].get("name") or "robot"
    parts = [robot]
    if run.get("object"):
        parts.append(f"with {s.get('object') or 'object'}")
    for key in ("maneuver", "controller"):
        if s.get(key) and str(s[key]) not in parts:  # a capture's controller is "capture" too
            parts.append(str(s[key]))
    return ", ".join(parts)


def build_scene(records: RunRecords) -> dict:
    """The page's data for the run ``records`` (see the module docstring)."""
    ff = records.load_robot()
    source = urdf_path(records.run["robot"]["source"])
    visuals = urdf_visuals(ff.urdf_xml, source.parent if source is not None else None)
    t = records.t
    decimation = frame_stride(t)
    rows = decimation.indices
    links = list(dict.fromkeys([ff.base_link] + [v.link for v in visuals]))
    qs = _robot_states(ff, records, rows)
    poses = link_poses(ff, qs, links)
    positions = poses[:, :, :3].reshape(-1, 3)
    ee = _optional(records, "ee_positions", rows)
    targets = _optional(records, "ee_targets", rows)
    com = _optional(records, "com", rows)
    names, modes = _modes(records, rows)
    lo, hi = positions.min(axis=0), positions.max(axis=0)
    extent = max(float(np.max(hi - lo)), 0.3)
    return {
        "title": _title(records),
        "summary": {k: records.summary.get(k) for k in ("robot", "object", "maneuver", "controller", "mode",
                                                          "final_mode", "duration_s", "rate_hz", "engine")
                    if records.summary.get(k) is not None},
        "planar": ff.base == "planar",
        "frames": {"count": int(rows.size), "fps": decimation.fps, "log_rate": decimation.log_rate,
                   "stride": decimation.stride, "samples": int(t.size)},
        "t": pack(t[rows]),
        "mode_names": names,
        "modes": modes,
        "links": links,
        "base_link": 0,
        "link_poses": pack(poses),
        "visuals": [_visual_json(v, links.index(v.link)) for v in visuals],
        "com": None if com is None else pack(com),
        "end_effectors": list(ff.end_effectors) if ee is not None and ee.shape[1] == 3 * len(ff.end_effectors) else [],
        "ee_positions": None if ee is None else pack(ee),
        "ee_targets": None if targets is None or not np.isfinite(targets).any() else pack(targets),
        "thrusters": _thrusters(records, rows),
        "object": _object(records, rows),
        "bounds": [lo.tolist(), hi.tolist()],
        "extent": extent,
    }
