"""/osi/<frame>: the GJM server computes Lambda of each frame next to its GJM, in the mode in
force, in the layout of /gjm/<frame> with rows and columns labelled; a frame whose Lambda is
singular publishes nothing and is named on /diagnostics."""

from __future__ import annotations

import numpy as np
from conftest import robot

from freeflyer_control.physics.operational_space import operational_space_inertia
from freeflyer_control.physics.state import make_state
from freeflyer_control.ros.conversions import multiarray_to_matrix
from freeflyer_control.runtime.gjm_server import GjmServer


def test_lambda_is_computed_next_to_the_gjm_in_the_mode_in_force_with_labelled_rows():
    ff = robot("spatial_7dof")
    state = make_state(ff, joint_positions=ff.ready_pose)
    server = GjmServer(ff)
    for mode in ("floating", "flying"):
        server.set_mode(mode)
        out = server.compute(state)["ee_link"]
        expected = operational_space_inertia(ff, ff.create_data(), state.q, mode, "ee_link").matrix
        labels = "vx,vy,vz,wx,wy,wz"
        assert out.osi_array.dims == ((labels, 6, 36), (labels, 6, 6))
        np.testing.assert_array_equal(multiarray_to_matrix(out.osi_array.dims, out.osi_array.data), expected)
    assert server.singularity_status({"ee_link": out}).values["ee_link osi"] == "published"


def test_a_frame_with_a_singular_lambda_publishes_nothing_and_is_reported():
    """The planar arm stretched out in flying mode (the base held): the end-effector cannot
    move along the arm, Lambda^-1 loses rank."""
    ff = robot("planar_4link")
    state = make_state(ff)  # every joint at 0: the arm stretched along x
    server = GjmServer(ff)
    server.set_mode("flying")
    out = server.compute(state)["ee_link"]
    assert out.osi.singular and out.osi_array is None
    assert out.array is not None  # the GJM itself is still published
    status = server.singularity_status({"ee_link": out})
    assert status.level == "warn" and status.announce
    assert status.values["ee_link osi"] == "singular"
    assert "ee_link: Lambda is singular in flying mode (Lambda^-1 rank 2 of 3: a kinematic singularity); " \
           "/osi/ee_link is not published" in status.message
