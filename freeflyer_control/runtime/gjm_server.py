"""The GJM node's logic: the GJM of each configured frame at the latest measured state."""

from __future__ import annotations

from dataclasses import dataclass

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.gjm import GJM, generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import SingularityMeasures, singularity_measures
from freeflyer_control.physics.state import State
from freeflyer_control.ros.conversions import ErrorCounter, MessageError, MultiArrayFields, matrix_to_multiarray
from freeflyer_control.runtime.plausibility import PlausibilityBounds


@dataclass(frozen=True)
class GjmOutput:
    """For one frame: the GJM, its message layout and its singularity measures."""

    gjm: GJM
    array: MultiArrayFields
    measures: SingularityMeasures


class GjmServer:
    """Args:
    ff: the robot.
    frames: frames to publish the GJM of (default: the end-effectors).
    """

    def __init__(self, ff: FreeFlyerModel, frames: tuple[str, ...] = ()):
        self.ff = ff
        self.frames = tuple(frames) or tuple(ff.end_effectors)
        for frame in self.frames:
            ff.frame_id(frame)  # unknown frames fail at start, listing the links
        self.data = ff.create_data()
        self.mode = Mode.FLOATING
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
            out[frame] = GjmOutput(G, matrix_to_multiarray(G.matrix, "twist", "actuated"),
                                   singularity_measures(G.matrix))
        return out
