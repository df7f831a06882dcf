"""The compiled GJM and H*/C* (physics.kernels.reduced, numba) give the NumPy reference's numbers.

With numba installed, generalized_jacobian and reduced_dynamics finish with one compiled call;
the NumPy / LAPACK expressions stay the reference (physics.fastpath picks the path). Both run
here on the same inputs: every bundled robot, every mode, every body frame, with and without a
point offset, a given conserved momentum, a caller's mass matrix and idle wheels.

Tolerance: the compiled path factors M_ff by Cholesky where the reference uses LU, and sums in
another order, so results differ by a few ulps of the largest entry times the conditioning of
M_ff (below 1e3 for these robots); 1e-12 of the largest entry bounds that with room, and a
wrong index or sign would show at order 1.
"""

from __future__ import annotations

import zlib

import numpy as np
import pinocchio as pin
import pytest
from conftest import random_state

from freeflyer_control.errors import ModeError
from freeflyer_control.model.robots import load_robot, robot_names
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.momentum import conserved_momentum
from freeflyer_control.physics.reduced import reduced_dynamics
from freeflyer_control.physics.state import base_rotation, base_rotation_into

pytest.importorskip("numba")

ROUND_OFF = 1e-12  # of the largest entry: see the module docstring
STATES_PER_ROBOT = 3


def both_paths(call):
    """(compiled result, NumPy result) of ``call()``."""
    with fastpath.forced("compiled"):
        fast = call()
    with fastpath.forced("numpy"):
        reference = call()
    return fast, reference


def assert_round_off_equal(fast: np.ndarray, reference: np.ndarray) -> None:
    assert fast.shape == reference.shape
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    np.testing.assert_allclose(fast, reference, rtol=0, atol=ROUND_OFF * scale)


def body_frames(ff) -> list[str]:
    """Every body (link) frame of the robot: the GJM takes any of them."""
    return [f.name for f in ff.model.frames if f.type == pin.FrameType.BODY]


def states(ff, name: str):
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # fixed per robot
    return [random_state(ff, rng) for _ in range(STATES_PER_ROBOT)]


@pytest.mark.parametrize("name", robot_names())
@pytest.mark.parametrize("mode", list(Mode), ids=lambda m: m.value)
def test_compiled_gjm_equals_the_numpy_gjm_for_every_frame_point_and_conserved_momentum(name, mode):
    ff = load_robot(name)
    data = ff.create_data()
    point = np.array([0.05, -0.03, 0.02 if ff.base == "spatial" else 0.0])
    for state in states(ff, name):
        # A conserved value other than the state's own, so the drift term really differs.
        conserved = 1.3 * conserved_momentum(ff, data, state, mode) + 0.01
        M = mass_matrix(ff, data, state.q)
        for frame in body_frames(ff):
            for kwargs in ({}, {"point": point}, {"conserved": conserved}, {"M": M},
                           {"point": point, "conserved": conserved, "M": M}):
                fast, reference = both_paths(
                    lambda: generalized_jacobian(ff, data, state, mode, frame, **kwargs))
                assert_round_off_equal(fast.matrix, reference.matrix)
                assert_round_off_equal(fast.drift, reference.drift)
                assert (fast.mode, fast.frame, fast.row_names, fast.column_names) == (
                    reference.mode, reference.frame, reference.row_names, reference.column_names)
                np.testing.assert_array_equal(fast.point, reference.point)


@pytest.mark.parametrize("name", robot_names())
@pytest.mark.parametrize("mode", list(Mode), ids=lambda m: m.value)
def test_compiled_reduced_dynamics_equal_the_numpy_ones_with_and_without_idle_wheels(name, mode):
    ff = load_robot(name)
    data = ff.create_data()
    for state in states(ff, name):
        M = mass_matrix(ff, data, state.q)
        for kwargs in ({}, {"idle_wheels": True}, {"M": M}, {"M": M, "idle_wheels": True}):
            fast, reference = both_paths(lambda: reduced_dynamics(ff, data, state, mode, **kwargs))
            assert_round_off_equal(fast.H, reference.H)
            assert_round_off_equal(fast.C, reference.C)
            np.testing.assert_array_equal(fast.H, fast.H.T)  # symmetric to the bit
            assert fast.coordinate_names == reference.coordinate_names
            assert fast.mode is reference.mode


@pytest.mark.parametrize("name", robot_names())
@pytest.mark.parametrize("mode", list(Mode), ids=lambda m: m.value)
def test_reduced_effort_without_forming_h_star_equals_h_star_acc_plus_c_star_and_its_columns(name, mode):
    """The compiled computed-torque tick's route to H* acc + C* and to the columns of H* a
    hybrid solve needs (one Cholesky factorisation and matrix-vector products,
    physics.kernels.reduced.reduced_effort_into) gives the NumPy reference's, with and without idle
    wheels. Tolerance: that of the H*, C* themselves (module docstring), of the largest term
    of the product."""
    from freeflyer_control.physics.kernels import reduced as compiled
    from freeflyer_control.physics.reduced import reduced_plan

    ff = load_robot(name)
    data = ff.create_data()
    rng = np.random.default_rng(zlib.crc32(f"{name} {mode.value}".encode()))
    ws = compiled.reduced_workspace(ff.model.nv, ff.nb)
    for state in states(ff, name):
        M = mass_matrix(ff, data, state.q)
        b = pin.nonLinearEffects(ff.model, data, state.q, state.v)
        for idle_wheels in (False, True):
            with fastpath.forced("numpy"):
                reference = reduced_dynamics(ff, data, state, mode, M=M, idle_wheels=idle_wheels)
            acc = rng.normal(size=reference.C.size)
            out = np.full(acc.size, np.nan)
            layout = reduced_plan(compiled, ff, mode, idle_wheels).layout
            cols = np.arange(acc.size, dtype=np.int64)[::-1].copy()  # every column, any order
            H_cols = np.full((acc.size, acc.size), np.nan)
            assert compiled.reduced_effort_into(np.triu(M), b, state.v, state.q, layout, acc, out, ws, cols,
                                                H_cols) == 0
            expected = reference.H @ acc + reference.C
            scale = max(1.0, float(np.abs(reference.H).max() * np.abs(acc).max()), float(np.abs(reference.C).max()))
            np.testing.assert_allclose(out, expected, rtol=0, atol=ROUND_OFF * scale)
            assert_round_off_equal(H_cols, reference.H[:, cols])


def test_reduced_effort_reports_a_non_positive_definite_free_inertia_as_potrf_does():
    from freeflyer_control.physics.kernels import reduced as compiled
    from freeflyer_control.physics.reduced import reduced_plan

    ff = load_robot("spatial_6link")
    state = states(ff, "spatial_6link")[0]
    M = mass_matrix(ff, ff.create_data(), state.q)
    M[2, 2] = -1.0  # the third free base coordinate's inertia
    layout = reduced_plan(compiled, ff, Mode.FLOATING, True).layout
    acc, out = np.zeros(layout[2]), np.empty(layout[2])
    info = compiled.reduced_effort_into(M, np.zeros(ff.model.nv), state.v, state.q, layout, acc, out,
                                        compiled.reduced_workspace(ff.model.nv, ff.nb), np.zeros(0, np.int64),
                                        np.empty((0, 0)))
    _, _, expected = compiled.reduced_post(M, np.zeros(ff.model.nv), state.v, state.q, layout)
    assert info == expected == 3


def test_callers_mass_matrix_is_not_modified_by_either_path():
    ff = load_robot("spatial_6link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(7))
    M = mass_matrix(ff, data, state.q)
    kept = M.copy()
    both_paths(lambda: generalized_jacobian(ff, data, state, "floating", ff.end_effectors[0], M=M))
    both_paths(lambda: reduced_dynamics(ff, data, state, "flying", M=M))
    np.testing.assert_array_equal(M, kept)


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_base_rotation_into_gives_pinocchios_rotation_to_the_bit(name):
    # The compiled kernels build the base rotation from this plain function; the NumPy path
    # asks Pinocchio. Same formula, so the same bits, at any attitude.
    ff = load_robot(name)
    rng = np.random.default_rng(3)
    R = np.empty((3, 3))
    for _ in range(200):
        q = random_state(ff, rng).q
        base_rotation_into(ff.base == "planar", q, R)
        np.testing.assert_array_equal(R, base_rotation(ff, q))


def test_non_positive_definite_inertia_raises_one_line_linalg_error_on_both_paths():
    ff = load_robot("spatial_6link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(5))
    M = np.zeros((ff.model.nv, ff.model.nv))  # a massless base: M_ff singular
    for path in ("compiled", "numpy"):
        with fastpath.forced(path):
            for call in (lambda: generalized_jacobian(ff, data, state, "floating", "ee_link", M=M),
                         lambda: reduced_dynamics(ff, data, state, "floating", M=M)):
                with pytest.raises(np.linalg.LinAlgError) as err:
                    call()
                assert "\n" not in str(err.value) and "singular" in str(err.value)


def test_non_finite_configuration_raises_a_linalg_error_that_names_it_on_the_compiled_path():
    ff = load_robot("spatial_6link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(6))
    state.q[ff.nb + 1] = np.nan  # a joint angle
    with fastpath.forced("compiled"):
        for call in (lambda: generalized_jacobian(ff, data, state, "floating", "ee_link"),
                     lambda: reduced_dynamics(ff, data, state, "floating")):
            with pytest.raises(np.linalg.LinAlgError, match="^mass matrix not finite: the "
                               "configuration q holds a NaN or Inf; check the state$"):
                call()


@pytest.mark.parametrize("bad_mode", ["hovering", ["floating"]])
def test_unknown_mode_raises_mode_error_on_the_compiled_path_too(bad_mode):
    ff = load_robot("planar_4link")
    data = ff.create_data()
    state = random_state(ff, np.random.default_rng(1))
    with fastpath.forced("compiled"):
        with pytest.raises(ModeError, match="unknown mode"):
            generalized_jacobian(ff, data, state, bad_mode, "ee_link")
        with pytest.raises(ModeError, match="unknown mode"):
            reduced_dynamics(ff, data, state, bad_mode)


def test_environment_variable_selects_the_numpy_path(monkeypatch):
    monkeypatch.setattr(fastpath, "_kernels", fastpath._UNSET)  # decide again, then restore
    monkeypatch.setenv("FREEFLYER_NUMBA", "0")
    assert fastpath.path() == fastpath.NUMPY
    monkeypatch.setattr(fastpath, "_kernels", fastpath._UNSET)
    monkeypatch.delenv("FREEFLYER_NUMBA")
    assert fastpath.path() == fastpath.COMPILED


def test_forcing_an_unknown_path_names_the_paths():
    with pytest.raises(ValueError, match="path 'fast' unknown; paths: numpy, compiled"):
        with fastpath.forced("fast"):
            pass
