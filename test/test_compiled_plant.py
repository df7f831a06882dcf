"""The compiled plant (physics/kernels/plant.py) of the testbed emulator and plant_node against the Python Plant it replaces.

Skipped where numba is not installed (the optional 'fast' extra); the Python plant then runs,
which test_hil_emulator.py and test_hil_closed_loop.py cover.
"""

import re

import numpy as np
import pytest

from freeflyer_control.physics.kernels.plant import CompiledPlant, make_plant
from freeflyer_control.hil.config import load_testbed_config
from freeflyer_control.hil.emulator import TestbedEmulator
from freeflyer_control.model import load_robot
from freeflyer_control.physics.plant import Plant, PlantDiverged
from freeflyer_control.physics.state import make_state

numba = pytest.importorskip("numba", reason="the compiled plant step needs numba (pip install .[fast])")

# Same CF4 arithmetic in another summation order: each step differs by a few ulps, and a
# stable integrator carries that forward without growth over a few hundred steps.
TOL = 1e-12


def ready_state(ff):
    return make_state(ff, joint_positions=dict(ff.ready_pose))


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_compiled_plant_steps_like_the_python_plant_to_round_off(name):
    ff = load_robot(name)
    compiled, python = CompiledPlant(ff, ready_state(ff), 1e-3), Plant(ff, ready_state(ff), 1e-3)
    rng = np.random.default_rng(7)
    for k in range(300):
        tau = rng.normal(size=ff.model.nv)   # base wrench (base_link axes), joint torques, N / N m
        if k % 3 == 0:
            tau[: ff.nb] = 0.0               # both branches of the momentum update
        a, b = compiled.step(tau=tau), python.step(tau=tau)
        scale = max(1.0, np.abs(b.v).max())
        assert np.abs(a.q - b.q).max() < TOL and np.abs(a.v - b.v).max() < TOL * scale, k
    assert np.abs(compiled.momentum_world - python.momentum_world).max() < TOL
    assert np.abs(compiled.last_acceleration - python.last_acceleration).max() < TOL * 100
    assert compiled._energy == pytest.approx(python._energy, rel=TOL)
    assert compiled.t == pytest.approx(python.t)


def test_a_reset_state_restarts_the_compiled_step_from_it():
    ff = load_robot("planar_4link")
    start = ready_state(ff)
    compiled, python = CompiledPlant(ff, start, 1e-3), Plant(ff, start, 1e-3)
    tau = np.linspace(-1.0, 1.0, ff.model.nv)
    for _ in range(20):
        compiled.step(tau=tau)
    compiled.state = start                   # the cached M(q), b(q, v) must follow the new state
    for _ in range(20):
        a, b = compiled.step(tau=tau), python.step(tau=tau)
    assert np.abs(a.q - b.q).max() < TOL and np.abs(a.v - b.v).max() < TOL


def test_a_diverging_compiled_step_is_refused_like_the_python_one():
    ff = load_robot("planar_4link")
    tau = np.zeros(ff.model.nv)
    tau[ff.nb] = 1e9                         # N m on joint1: far past any step size
    reasons = []
    for plant in (CompiledPlant(ff, ready_state(ff), 1e-2), Plant(ff, ready_state(ff), 1e-2)):
        with pytest.raises(PlantDiverged) as err:
            for _ in range(5):
                plant.step(tau=tau)
        reasons.append(str(err.value))
        assert plant.state.q == pytest.approx(ready_state(ff).q)   # the state is held
    # Same check, same step, same coordinate; the speed itself is 1e43-ish round-off noise.
    numbers = re.compile(r"\d\.\d+e\+\d+")
    assert numbers.sub("#", reasons[0]) == numbers.sub("#", reasons[1])
    assert reasons[0].startswith("plant diverged at t = 0.01 s: base vx speed ")


@pytest.mark.parametrize("make", [CompiledPlant, Plant])
def test_generalized_forces_of_the_wrong_size_are_refused_before_anything_is_integrated(make):
    ff = load_robot("planar_4link")
    plant = make(ff, ready_state(ff), 1e-3)
    with pytest.raises(ValueError, match=f"tau must have {ff.model.nv} entries"):
        plant.step(tau=np.zeros(ff.model.nv + 1))
    assert plant.t == 0.0 and plant.diverged is None   # refused, not a divergence
    plant.step(tau=[0.0] * ff.model.nv)                  # a list is taken as floats


def test_the_compiled_step_hands_out_a_new_state_and_momentum_each_step():
    # Callers keep the State a step returns (recorders, the capture's grasp wrench): the next step
    # must not write into it.
    ff = load_robot("spatial_6link")
    plant = CompiledPlant(ff, ready_state(ff), 1e-3)
    tau = np.linspace(-1.0, 1.0, ff.model.nv)
    first, momentum = plant.step(tau=tau), plant.momentum_world
    kept = first.q.copy(), first.v.copy(), momentum.copy()
    second = plant.step(tau=tau)
    assert second.q is not first.q and plant.momentum_world is not momentum
    for a, b in zip((first.q, first.v, momentum), kept):
        np.testing.assert_array_equal(a, b)


def test_the_workspace_views_have_the_layout_of_the_workspace():
    # CompiledPlant passes the compiled step one buffer carved by workspace_views instead of
    # workspace()'s 29 arrays: the same shapes in the same order, back to back in the buffer.
    from freeflyer_control.physics.kernels import rigid_body as K
    from freeflyer_control.physics.kernels.arrays import kernel_model

    for name in ("planar_4link", "spatial_6link"):
        ff = load_robot(name)
        n, nq, nv, nb = kernel_model(ff).jint.shape[0], ff.model.nq, ff.model.nv, ff.nb
        arrays = K.workspace(n, nq, nv, nb)
        buf = np.zeros(sum(a.size for a in arrays))
        views, end = K.workspace_views(buf, n, nq, nv, nb)
        assert end == buf.size and [v.shape for v in views] == [a.shape for a in arrays]
        views[14][2, 0] = 7.0   # the views write into the buffer
        assert (buf == 7.0).sum() == 1


def _ee_position(ff, state):
    import pinocchio as pin

    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    return data.oMf[ff.frame_id(ff.end_effectors[0])].translation.copy()


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
@pytest.mark.parametrize("wall_mass", [None, 2.0])
def test_the_compiled_wall_contact_steps_like_the_python_one_to_round_off(name, wall_mass):
    # The end-effector 2 mm into a wall, pushed against it by its arm, bouncing off and landing
    # again: the contact force of every stage, its impulse on the momentum, its work in the
    # energy check and (a floating wall) the wall's own motion, on both steps.
    from freeflyer_control.physics.contact import WallContact

    ff = load_robot(name)
    start = ready_state(ff)
    normal = np.array([-1.0, 0.0, 0.0]) if name == "planar_4link" else np.array([-0.6, 0.0, -0.8])
    plants = [CompiledPlant(ff, start, 1e-3), Plant(ff, start, 1e-3)]
    for plant in plants:
        plant.contact = WallContact(ff, ff.end_effectors[0], _ee_position(ff, start) + 0.002 * normal, normal,
                                    mass=wall_mass)
    rng = np.random.default_rng(5)
    touching = 0
    for k in range(300):
        tau = np.zeros(ff.model.nv)
        tau[ff.arm_v_indices] = 0.3 * rng.normal(size=len(ff.arm_v_indices)) * ff.arm_effort_limits
        a, b = (p.step(tau=tau) for p in plants)
        touching += bool(plants[1].last_contact_impulse.any())
        assert np.abs(a.q - b.q).max() < TOL and np.abs(a.v - b.v).max() < 10 * TOL, k
        np.testing.assert_allclose(plants[0].last_contact_impulse, plants[1].last_contact_impulse, rtol=0, atol=TOL)
    assert 5 <= touching < 300   # in contact for part of the run only: pushing, and apart
    np.testing.assert_allclose(plants[0].momentum_world, plants[1].momentum_world, rtol=0, atol=TOL)
    assert plants[0]._energy == pytest.approx(plants[1]._energy, rel=1e-9)
    walls = [p.contact for p in plants]
    assert walls[0].offset == pytest.approx(walls[1].offset, abs=TOL)
    assert walls[0].speed == pytest.approx(walls[1].speed, abs=TOL)


def test_make_plant_says_which_step_runs():
    ff = load_robot("planar_4link")
    plant, note = make_plant(ff, ready_state(ff), 1e-3, compiled=False)
    assert type(plant) is Plant and note == "plant step: Python (compiled step not asked for)"
    plant, note = make_plant(ff, ready_state(ff), 1e-3)
    assert isinstance(plant, CompiledPlant) and note.startswith("plant step: compiled (numba, ready in ")
    assert plant.t == 0.0 and plant.state.q == pytest.approx(ready_state(ff).q)   # warm-up undone


def test_emulator_on_the_compiled_plant_sends_what_it_sends_on_the_python_one():
    config = load_testbed_config("planar_4link")
    ff = config.robot
    emulators = [TestbedEmulator(config, ready_state(ff), seed=3, compiled=c) for c in (True, False)]
    for emu in emulators:
        emu.on_joint_efforts([0.4, -0.2, 0.1, 0.05], 0.0)        # wire order and signs: the config's
        emu.on_wheel_command([0.01], 0.0)
        emu.on_thruster_command([0.5, 0, 0, 0, 0.5, 0, 0, 0], 0.02)
        emu.advance(0.5)
    fast, slow = emulators
    assert np.abs(fast.state.q - slow.state.q).max() < TOL
    enc_fast, enc_slow = fast.encoder_samples(0.5), slow.encoder_samples(0.5)
    assert len(enc_fast) == len(enc_slow) > 100
    # Quantized to 4096 counts per turn: round-off can only flip a reading sitting on a count
    # boundary, by one count.
    count = 2 * np.pi / 4096
    assert max(np.abs(a.positions - b.positions).max() for a, b in zip(enc_fast, enc_slow)) <= count * 1.0001
    cap_fast, cap_slow = fast.capture_samples(0.5), slow.capture_samples(0.5)
    assert max(np.abs(a.position - b.position).max() for a, b in zip(cap_fast, cap_slow)) < TOL


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_plant_server_on_the_compiled_step_publishes_what_the_python_one_does(name):
    """plant_node's server (sim_loop_node's too) with ``compiled=None`` (plant_step:=auto) under
    held arm, wheel and thruster commands: the same measurements as on the Python step."""
    from freeflyer_control.runtime.plant_server import PlantServer

    ff = load_robot(name)
    servers = [PlantServer(ff, ready_state(ff), rate=1000.0, compiled=c) for c in (None, False)]
    assert servers[0].plant_note.startswith("plant step: compiled")
    assert servers[1].plant_note.startswith("plant step: Python")
    rng = np.random.default_rng(3)
    for k in range(200):
        now = (k + 1) * 1e-3
        arm = rng.uniform(-0.3, 0.3, len(ff.arm_joint_names))
        thrust = rng.uniform(0.0, 0.5, len(ff.thrusters))
        wheels = rng.uniform(-0.05, 0.05, len(ff.wheel_joint_names))
        for server in servers:
            server.set_arm_torques(arm, now)
            if thrust.size:
                server.set_thruster_forces(thrust, now)
            if wheels.size:
                server.set_wheel_torques(wheels, now)
            assert server.step(now) is None
    a, b = (s.measurement() for s in servers)
    assert np.allclose(a.joint_positions, b.joint_positions, rtol=0, atol=TOL)
    assert np.allclose(a.joint_velocities, b.joint_velocities, rtol=0, atol=10 * TOL)  # rates: 1/h larger
    assert np.allclose(servers[0].plant.state.q, servers[1].plant.state.q, rtol=0, atol=TOL)
