"""What rviz shows of the actuation (runtime.actuation_view): thruster arrows, base attitude error."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.references import BaseReference
from freeflyer_control.model import load_robot
from freeflyer_control.physics.state import make_state, xyzw_from_rotation
from freeflyer_control.runtime.actuation_view import base_attitude_error, thruster_arrows


def test_a_thruster_arrow_is_its_plume_opposite_to_its_force_on_the_base_with_length_in_proportion():
    ff = load_robot("planar_4link")
    forces = np.zeros(len(ff.thrusters))
    forces[0], forces[3] = ff.thrusters[0].max_force, 0.25 * ff.thrusters[3].max_force
    arrows = thruster_arrows(ff, forces, full_length=0.4)
    assert [a.name for a in arrows] == [ff.thrusters[0].name, ff.thrusters[3].name]  # the others are off
    for arrow, k, fraction in zip(arrows, (0, 3), (1.0, 0.25)):
        t = ff.thrusters[k]
        assert np.allclose(arrow.start, t.position)
        assert np.allclose(arrow.end - arrow.start, -0.4 * fraction * np.asarray(t.direction))
    assert thruster_arrows(ff, np.zeros(0), 0.4) == []  # no thruster command: nothing drawn


def test_the_attitude_error_is_the_rotation_that_brings_the_base_to_its_reference():
    ff = load_robot("spatial_6link")
    R = pin.rpy.rpyToMatrix(0.1, -0.2, 0.3)
    state = make_state(ff, base_orientation_xyzw=xyzw_from_rotation(R))
    axis = np.array([0.0, 0.6, 0.8])
    R_ref = pin.exp3(0.05 * axis) @ R  # 0.05 rad about axis, world axes, beyond the base's attitude
    ref = BaseReference(np.zeros(3), xyzw_from_rotation(R_ref), np.zeros(3), np.zeros(3))
    assert np.allclose(base_attitude_error(ff, state.q, ref), 0.05 * axis, atol=1e-12)
