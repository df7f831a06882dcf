"""Fuzz: CooperativeController.tick with adversarial object references and states.

References are plausible (a pose near the held one, a modest twist) or carry adversarial numbers
(NaN, Inf, 1e154, 1e308, subnormals) in the position, the twist or the rotation matrix (which may
then not be a rotation); states are the held state with plausible or adversarial velocities.
Claims, for every call: nothing raises; every output is finite and sized for the robot; every
command is zero whenever the status is not ``ok``. The fuzz must reach ``ok`` and every refusal.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from fuzz_support import adversarial_float, adversarial_vector, fuzz_count, fuzz_rng

from freeflyer_control.control.cooperative import CooperativeController, ObjectReference
from freeflyer_control.physics.state import State
from freeflyer_control.sim.cooperative import ObjectSimConfig, prepare


def test_cooperative_tick_survives_adversarial_references_and_states():
    rng = fuzz_rng(salt=1111)
    _, obj, held, state, maneuver = prepare(ObjectSimConfig())
    # Every mode; flying twice, with an ideal wrench and through the thrusters.
    kinds = [(m, "ideal") for m in ("floating", "rotation-floating", "rotation-flying", "translation-flying",
                                    "flying")] + [("flying", "thrusters")]
    controllers = [CooperativeController(held, obj, m, 5.0, base_actuation=b) for m, b in kinds]
    X0 = maneuver(0.0).pose
    statuses: dict[str, int] = {}
    # Each tick costs ~0.25 ms: a tenth of the default count keeps the module under ~5 s.
    for i in range(max(1, fuzz_count() // 10)):
        translation = X0.translation + adversarial_vector(rng, 3, 0.01)
        R = X0.rotation.copy()
        if rng.random() < 0.1:
            R[rng.integers(3), rng.integers(3)] = adversarial_float(rng)
        ref = ObjectReference(_raw_se3(R, translation), adversarial_vector(rng, 6, 0.01))
        v = state.v.copy()
        if rng.random() < 0.1:
            v = adversarial_vector(rng, v.size, 0.01)
        tick = controllers[i % len(controllers)].tick(State(state.q, v), ref)
        statuses[tick.status] = statuses.get(tick.status, 0) + 1
        a = tick.actuation
        outputs = np.concatenate([a.arm_torques, a.wheel_torques, a.thruster_forces, a.base_wrench_world,
                                  tick.object_twist, tick.twist_command, [tick.internal_force]])
        assert np.isfinite(outputs).all()
        assert a.arm_torques.size == held.arm_v_indices.size
        if tick.status != "ok":
            assert not (a.arm_torques.any() or a.wheel_torques.any() or a.thruster_forces.any()
                        or a.base_wrench_world.any())
    assert statuses.get("ok", 0) > 0 and statuses.get("implausible", 0) > 0, statuses


def _raw_se3(R, p):
    """An SE3 holding whatever numbers it is given (non-finite, not a rotation), as a message
    deserialised without checks could."""
    X = pin.SE3.Identity()
    X.translation = p
    X.rotation = R
    return X
