"""The GJM node's logic: the GJM and the operational-space inertia Lambda of each configured
frame at the latest measured state."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.gjm import GJM, generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.operational_space import OperationalSpaceInertia, operational_space_inertia
from freeflyer_control.physics.singularity import (
    BLOCKS,
    SIGMA_NEAR,
    BlockMeasures,
    SingularityMeasures,
    block_measures,
    near_singular,
    singularity_warning,
)
from freeflyer_control.physics.state import State
from freeflyer_control.ros.conversions import ErrorCounter, MessageError, MultiArrayFields, matrix_to_multiarray
from freeflyer_control.runtime.plausibility import PlausibilityBounds

# Layout of /gjm/<frame>/singularity/blocks: one row per block, one column per measure.
BLOCK_MEASURES = ("sigma_min", "manipulability", "condition_number", "rank")


@dataclass(frozen=True)
class GjmOutput:
    """For one frame: the GJM, its message layout and its singularity measures.

    Attributes:
        measures: of the whole matrix (the /gjm/<frame>/singularity message, unchanged).
        blocks: translational, rotational and full (physics.singularity.block_measures).
        blocks_array: ``blocks`` as a 3 x 4 message layout (rows BLOCKS, columns BLOCK_MEASURES).
        osi: Lambda of the frame origin in the mode (physics.operational_space).
        osi_array: Lambda as the /osi/<frame> layout (rows and columns labelled with the
            GJM's row names, comma-separated), or None where Lambda is singular (not inverted,
            not published).
    """

    gjm: GJM
    array: MultiArrayFields
    measures: SingularityMeasures
    blocks: dict[str, BlockMeasures]
    blocks_array: MultiArrayFields
    osi: OperationalSpaceInertia | None = None
    osi_array: MultiArrayFields | None = None


class GjmServer:
    """Args:
    ff: the robot.
    frames: frames to publish the GJM of (default: the end-effectors).
    sigma_warn: a block whose sigma_min falls below it is reported on /diagnostics (WARN);
        m/rad on translational rows (default: where resolved rate starts damping).
    """

    def __init__(self, ff: FreeFlyerModel, frames: tuple[str, ...] = (), sigma_warn: float = SIGMA_NEAR):
        self.ff = ff
        self.frames = tuple(frames) or tuple(ff.end_effectors)
        for frame in self.frames:
            ff.frame_id(frame)  # unknown frames fail at start, listing the links
        if not (np.isfinite(sigma_warn) and sigma_warn >= 0):
            raise ValueError(f"sigma_warn must be a finite number >= 0 (m/rad), got {sigma_warn}")
        self.sigma_warn = float(sigma_warn)
        self.data = ff.create_data()
        fastpath.warm("gjm")  # compile (first use) or load it now, not on a message
        self.mode = Mode.FLOATING
        self._near: set[str] = set()
        self.bounds = PlausibilityBounds.from_model(ff)
        self.errors = ErrorCounter()  # states refused as implausible

    def set_mode(self, name: str) -> None:
        self.mode = Mode.parse(name)

    def compute(self, state: State) -> dict[str, GjmOutput]:
        """Per frame; nothing for an implausible state (refused, counted in ``errors``)."""
        problem = self.bounds.state(self.ff, state)
        if problem:
            self.errors.record(MessageError("implausible", problem))
            return {}
        out = {}
        for frame in self.frames:
            G = generalized_jacobian(self.ff, self.data, state, self.mode, frame)
            blocks = block_measures(G.matrix, G.row_names)
            table = np.array([[getattr(blocks[b].measures, m) for m in BLOCK_MEASURES] for b in BLOCKS], dtype=float)
            osi = operational_space_inertia(self.ff, self.data, state.q, self.mode, frame)
            labels = ",".join(osi.row_names)
            out[frame] = GjmOutput(G, matrix_to_multiarray(G.matrix, "twist", "actuated"), blocks["full"].measures,
                                   blocks, matrix_to_multiarray(table, ",".join(BLOCKS), ",".join(BLOCK_MEASURES)),
                                   osi, None if osi.singular else matrix_to_multiarray(osi.matrix, labels, labels))
        return out

    def singularity_status(self, outputs: dict[str, GjmOutput]) -> "GjmStatus":
        """The /diagnostics status of the latest ``outputs`` (empty: no state seen yet).

        WARN names every frame with a block below ``sigma_warn``; the values hold each frame's
        block measures (``<frame> <block> sigma_min`` ...). ``announce`` is True when a frame
        has come near a singularity since the previous call (log it then, not every time).
        """
        values: dict[str, str] = {"sigma_warn": f"{self.sigma_warn:g}", "mode": self.mode.value}
        if not outputs:
            return GjmStatus("warn", "waiting for /joint_states and /base/odom", values, False)
        warnings, near = [], set()
        for frame, out in outputs.items():
            for name, b in out.blocks.items():
                m = b.measures
                values[f"{frame} {name} sigma_min"] = f"{m.sigma_min:.4g}"
                values[f"{frame} {name} condition_number"] = f"{m.condition_number:.4g}"
                values[f"{frame} {name} rank"] = str(m.rank)
            values[f"{frame} near_singular"] = ",".join(b.name for b in near_singular(out.blocks, self.sigma_warn))
            line = singularity_warning(frame, out.blocks, self.sigma_warn, "sigma_warn")
            if line:
                warnings.append(line)
                near.add(frame)
            if out.osi is not None:
                values[f"{frame} osi"] = "published" if out.osi_array is not None else "singular"
                if out.osi.singular:
                    warnings.append(f"{frame}: Lambda is singular in {self.mode.value} mode (Lambda^-1 rank "
                                    f"{out.osi.rank} of {len(out.osi.row_names)}: a kinematic singularity); "
                                    f"/osi/{frame} is not published")
                    near.add(frame)
        announce = bool(near - self._near)
        self._near = near
        if warnings:
            return GjmStatus("warn", " | ".join(warnings), values, announce)
        return GjmStatus("ok", f"no block below sigma_warn {self.sigma_warn:g}", values, False)


@dataclass(frozen=True)
class GjmStatus:
    """Attributes:
    level: ``ok`` or ``warn``; message: one line; values: key -> value for /diagnostics;
    announce: a frame came near a singularity since the previous status (log the message).
    """

    level: str
    message: str
    values: dict[str, str]
    announce: bool
