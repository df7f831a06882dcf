"""What the physics derives from a model lives and dies with the model.

A campaign makes new models every run (mass and thruster dispersions, a held object). The
physics keeps what it derives from a model once (thruster matrix, limits, frame ids, the plans
of compiled calls, the base-invariant constants, the closed chain's loops) on the model itself
(``FreeFlyerModel.derived``); module tables keyed by ``id(model)`` kept every model alive, about
50 kB a run. Claim: once the caller lets a model go, nothing of the package holds it.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.analysis.reorient import free_momentum
from freeflyer_control.model import load_robot
from freeflyer_control.model.objects import attach_object, load_object
from freeflyer_control.physics.actuators import Actuation, base_wrench_limits, saturate, thruster_matrix
from freeflyer_control.physics.base_invariant.tree import build_tree
from freeflyer_control.physics.closed_chain import constrained_acceleration
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.grasp_pose import check_object
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import make_state


def use_everything_derived(ff) -> None:
    """Every physics call that derives something from ``ff`` once and keeps it."""
    data = ff.create_data()
    state = make_state(ff)
    thruster_matrix(ff)
    base_wrench_limits(ff)
    saturate(ff, Actuation(np.zeros(len(ff.arm_joint_names)), np.zeros(len(ff.wheel_joint_names)),
                           np.zeros(len(ff.thrusters)), np.zeros(0)), state.v)
    for mode in (Mode.FLOATING, "rotation-floating"):   # (a mode as typed is a key too)
        generalized_jacobian(ff, data, state, mode, ff.end_effectors[0])
        reduced_dynamics(ff, data, state, mode)
        reduced_dynamics(ff, data, state, mode, idle_wheels=True)
    build_tree(ff, data, state.q, state.v)
    if ff.base == "planar":
        free_momentum(ff, data, state)


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_a_model_the_caller_lets_go_is_freed_with_everything_derived_from_it(name):
    ff = load_robot(name)
    use_everything_derived(ff)
    assert ff._derived, "the calls above derived nothing: this test would prove nothing"
    gone = weakref.ref(ff)
    del ff
    gc.collect()
    assert gone() is None, [type(r).__name__ for r in gc.get_referrers(gone())]


def test_a_held_objects_closed_chain_is_freed_with_the_model_that_holds_it():
    ff, obj = load_robot("dual_arm_planar"), load_object("planar_box")
    fa = attach_object(ff, obj)
    state = make_state(fa, joint_positions=check_object(ff, obj))
    constrained_acceleration(fa, fa.create_data(), obj, state.q, state.v, np.zeros(fa.model.nv))
    assert fa._derived
    gone = weakref.ref(fa), weakref.ref(obj)
    del ff, fa, obj, state
    gc.collect()
    assert gone[0]() is None and gone[1]() is None


def test_what_is_derived_once_is_the_same_object_on_every_call():
    ff = load_robot("planar_4link")
    data = ff.create_data()
    state = make_state(ff)
    assert thruster_matrix(ff) is thruster_matrix(ff)
    assert not thruster_matrix(ff).flags.writeable   # shared: nobody may change it
    assert ff._derived   # and a second call finds it
    before = dict(ff._derived)
    generalized_jacobian(ff, data, state, "floating", ff.end_effectors[0])
    n = len(ff._derived)
    generalized_jacobian(ff, data, state, "floating", ff.end_effectors[0])
    assert len(ff._derived) == n > len(before)   # the plan is derived once, not per call


def test_a_model_made_from_another_derives_its_own():
    import dataclasses

    ff = load_robot("planar_4link")
    thruster_matrix(ff)
    lighter = dataclasses.replace(ff, model=pin.Model(ff.model))
    assert lighter._derived == {} and lighter._derived is not ff._derived
