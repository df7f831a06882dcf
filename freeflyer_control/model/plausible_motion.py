"""How fast and how far a free-flyer's base can plausibly move: beyond these a measurement is
garbage (a wrong unit, a corrupt driver), not motion.

The controller refuses base odometry beyond them (:mod:`freeflyer_control.runtime.plausibility`,
node parameters ``max_base_speed``, ``max_base_rate``); a testbed's safety limits and a
campaign's initial-state dispersions are bounded by them, so that a limit can always trip before
the odometry is refused, and a dispersed run never starts where the controller would refuse it.
"""

DEFAULT_MAX_BASE_SPEED = 5.0       # m/s: an air-bearing base moves at < 0.5, a docking approach at < 1
DEFAULT_MAX_BASE_RATE = 10.0       # rad/s: about 1.6 turns per second
DEFAULT_MAX_BASE_DISTANCE = 1e4    # m from the world origin (the initial CoM or the table origin)
