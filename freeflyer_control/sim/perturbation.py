"""What differs, in one simulated run, between the robot as designed and the robot as flown.

A :class:`Perturbation` is the optional ``SimConfig.perturbation``: the lockstep simulation asks it
for the controller's model, the plant's model, the initial state, a measurement model and what the
actuators really do with a command. The base class changes nothing; a layer above ``sim`` (the
Monte-Carlo campaigns) subclasses it. It must be picklable (it travels to worker processes).
"""

from __future__ import annotations

from collections.abc import Callable

from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.state import State


class Perturbation:
    """The identity: every hook returns what it is given."""

    def controller_model(self, ff):
        """The model the controller believes in (``ff``: the robot as designed)."""
        return ff

    def plant_model(self, ff):
        """The robot the plant integrates (``ff``: the robot as designed)."""
        return ff

    def initial_state(self, ff, state: State) -> State:
        """The state the run really starts from (``state``: the configured one)."""
        return state

    def sensing(self, ff) -> Callable[[float, State], State] | None:
        """A fresh measurement model ``measure(t s, true state) -> state the controller reads``
        for one run (it may remember past states, for latency), or None for perfect sensing."""
        return None

    def actuation(self, ff, command: Actuation) -> Actuation:
        """What the actuators deliver when commanded ``command``."""
        return command
