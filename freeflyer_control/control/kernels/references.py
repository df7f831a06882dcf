"""The joint maneuvers' references, compiled from their one definition in
:mod:`freeflyer_control.control.maneuvers` (plain scalar loops there, so numba compiles them as
they are). The end-effector maneuvers' references are compiled with the resolved-rate law that
follows them (:func:`freeflyer_control.control.kernels.resolved_rate.task_references`)."""

from __future__ import annotations

from numba import njit

from freeflyer_control.control.maneuvers import wilde_profile
from freeflyer_control.physics.kernels.rigid_body import _JIT

wilde_reference = njit(**_JIT)(wilde_profile)
