"""Compiled (numba) control laws: computed torque in every mode, resolved rate and its task
references, the thruster allocator. Optional: needs numba (``physics.kernels.available()``).
The compiled simulation engine runs them in its loop; ``ResolvedRate.joint_rates`` calls
resolved rate from Python (``resolved_rate.task_rates``: the ROS controller's and the Python
engine's task-space ticks).

Each law has one definition: the plain functions of the Python path (``control.maneuvers``,
``control.damping.damping_lambda2``, ``control.allocation_kernel``, ...) are compiled
here as they are; what is written a second time, in scalar loops, says so and is held equal to
its Python definition by the tests. Importing this package goes through
:mod:`freeflyer_control.physics.kernels` first, which keeps numba's cache fresh.
"""

from __future__ import annotations

import freeflyer_control.physics.kernels  # noqa: F401  (the cache check runs before any kernel loads)
