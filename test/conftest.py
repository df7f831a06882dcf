"""Shared fixtures: the bundled robots and random states that exercise every term."""

from __future__ import annotations

import contextlib
import functools
import logging
from pathlib import Path

import numpy as np
import pytest
import yaml

from freeflyer_control.model import FreeFlyerModel, load_robot
from freeflyer_control.physics.state import State, make_state

BUNDLED_ROBOTS = ("planar_4link", "spatial_6link", "dual_arm_planar", "spatial_7dof")
PACKAGE_LOGGER = "freeflyer_control"


class PackageLog(logging.Handler):
    """Log records of the package's loggers, captured on those loggers themselves.

    pytest's ``caplog`` listens on the root logger, so it only sees records that propagate there.
    In one process with ``launch`` (the launch tests under ``colcon test``) that stops being
    true: importing ``launch.logging`` makes every logger created afterwards non-propagating
    (its ``LaunchLogger`` class) and each launch resets handlers and the root level, so what
    ``caplog`` saw depended on the order the tests ran in. This handler is attached to the
    package logger and to each of its children that exists (the package's loggers are
    module-level, created at import), so it records whatever propagation, root handlers and
    root level are. Every test that reads log records uses it (``package_log``), not ``caplog``.
    """

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        # A record that propagates through two of the loggers reaches this handler twice.
        if not any(r is record for r in self.records):
            self.records.append(record)

    @property
    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.records]

    @contextlib.contextmanager
    def at_level(self, level: int, logger: str = PACKAGE_LOGGER):
        """Capture records of ``logger`` and its existing children at ``level`` and above."""
        loggers = [logging.getLogger(logger)] + [
            obj for name, obj in sorted(logging.root.manager.loggerDict.items())
            if name.startswith(logger + ".") and isinstance(obj, logging.Logger)]
        saved = [(lg, lg.level, lg.disabled) for lg in loggers]
        for lg in loggers:
            lg.setLevel(level)
            lg.disabled = False  # a logging.config call may have disabled existing loggers
            lg.addHandler(self)
        try:
            yield self
        finally:
            for lg, old_level, old_disabled in saved:
                lg.removeHandler(self)
                lg.setLevel(old_level)
                lg.disabled = old_disabled


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels_ready():
    """Compile (or load from numba's cache) every numba kernel once, before the first test.

    Tests that check what a command prints expect that output alone. Without this, whichever of
    them first reaches a compiled path on a cold cache (every fresh CI clone) would also get the
    one-time "compiling the simulation kernels" lines, and pass or fail by test order. The notice
    itself is tested in test_fast_modes, the allocator's cold start in a subprocess of
    test_allocation_kernel."""
    from freeflyer_control.sim import fast

    if fast.available():
        from freeflyer_control.control.allocation import ThrusterAllocator
        from freeflyer_control.physics import fastpath
        from freeflyer_control.sim.fast.runner import warm_up

        warm_up()
        fastpath.warm("gjm")
        fastpath.warm("reduced")
        ThrusterAllocator(load_robot("planar_4link")).allocate(np.zeros(3))
    yield


@pytest.fixture
def rclpy_context():
    """A fresh rclpy context for one test (skips without rclpy), shut down after it."""
    rclpy = pytest.importorskip("rclpy", reason="rclpy not available: needs a sourced ROS 2 (Jazzy) install")
    from rclpy.context import Context

    ctx = Context()
    rclpy.init(args=[], context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.fixture
def package_log() -> PackageLog:
    """Records of the package's loggers, independent of what else configured logging."""
    return PackageLog()


@functools.lru_cache(maxsize=None)
def robot(name: str) -> FreeFlyerModel:
    """A bundled robot, loaded once per test session (models are not mutated by tests)."""
    return load_robot(name)


@pytest.fixture(params=BUNDLED_ROBOTS)
def bundled(request) -> FreeFlyerModel:
    return robot(request.param)


def random_unit_quaternion_xyzw(rng: np.random.Generator) -> np.ndarray:
    quat = rng.normal(size=4)
    return quat / np.linalg.norm(quat)


def random_state(
    ff: FreeFlyerModel,
    rng: np.random.Generator,
    *,
    joint_range: float = 1.2,
    joint_rate: float = 0.5,
    base_speed: float = 0.1,
    base_rate: float = 0.2,
) -> State:
    """A random state: base anywhere with any attitude, joints within +-joint_range rad,
    all velocities non-zero (so the momentum is non-zero unless the caller zeroes it)."""
    if ff.base == "planar":
        pose = dict(base_position=(*rng.uniform(-1, 1, 2), 0.0), base_yaw=rng.uniform(-np.pi, np.pi))
        lin = (*rng.uniform(-base_speed, base_speed, 2), 0.0)
        ang = (0.0, 0.0, rng.uniform(-base_rate, base_rate))
    else:
        pose = dict(base_position=rng.uniform(-1, 1, 3),
                    base_orientation_xyzw=random_unit_quaternion_xyzw(rng))
        lin = rng.uniform(-base_speed, base_speed, 3)
        ang = rng.uniform(-base_rate, base_rate, 3)
    return make_state(
        ff,
        **pose,
        base_linear_velocity=lin,
        base_angular_velocity=ang,
        joint_positions=rng.uniform(-joint_range, joint_range, ff.nj),
        joint_velocities=rng.uniform(-joint_rate, joint_rate, ff.nj),
    )


def zero_momentum(ff: FreeFlyerModel, state: State) -> State:
    """The same configuration and joint rates with the base velocity that makes P = L = 0."""
    from freeflyer_control.physics.dynamics import mass_matrix

    M = mass_matrix(ff, ff.create_data(), state.q)
    nb = ff.nb
    v = state.v.copy()
    v[:nb] = -np.linalg.solve(M[:nb, :nb], M[:nb, nb:] @ v[nb:])
    return State(state.q.copy(), v)


BARE_PLANAR_URDF = """<robot name="bare">
  <link name="base_link"><inertial><mass value="10"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l1"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base_link"/><child link="l1"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>"""


def bare_planar_robot() -> FreeFlyerModel:
    """A one-link planar free-flyer from a bare URDF: no wheels, no thrusters."""
    from freeflyer_control.model import load_model

    return load_model(BARE_PLANAR_URDF, base="planar", end_effectors=["l1"])


def urdf_2link() -> str:
    """Planar base + 2-link arm.

    base_link: massless root (the ROS convention) with the base's 4 kg on base_inertia, fixed at
    its origin (Pinocchio merges it back): 0.4 m square, CoM at the origin,
    I_zz = 4 (0.4^2 + 0.4^2) / 12 kg m^2.
    joint1 at (0.2, 0, 0) in base_link; link1, link2: 0.5 m, 2 kg, CoM at mid-length on the
    link axis, I_zz = 2 0.5^2 / 12 kg m^2; ee_link: a 10 g point at the tip of link2.
    All joints revolute about z, limits +-3.14 rad.
    """
    def link(name: str, length: float, mass: float) -> str:
        izz = mass * length**2 / 12
        return (f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>'
                f'<inertia ixx="0.0008" ixy="0" ixz="0" iyy="{izz}" iyz="0" izz="{izz}"/></inertial></link>')

    def joint(name: str, parent: str, child: str, x: float) -> str:
        return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
                f'<origin xyz="{x} 0 0"/><axis xyz="0 0 1"/>'
                '<limit lower="-3.14" upper="3.14" effort="20" velocity="2"/></joint>')

    izz_b = 4.0 * 2 * 0.4**2 / 12
    return f"""<?xml version="1.0"?><robot name="planar_2link">
<link name="base_link"/>
<link name="base_inertia"><inertial><origin xyz="0 0 0"/><mass value="4"/>
<inertia ixx="{izz_b / 2}" ixy="0" ixz="0" iyy="{izz_b / 2}" iyz="0" izz="{izz_b}"/></inertial></link>
<joint name="base_inertia_joint" type="fixed"><parent link="base_link"/><child link="base_inertia"/></joint>
{link("link1", 0.5, 2.0)}{link("link2", 0.5, 2.0)}
<link name="ee_link"><inertial><origin xyz="0 0 0"/><mass value="0.01"/>
<inertia ixx="1e-7" ixy="0" ixz="0" iyy="1e-7" iyz="0" izz="1e-7"/></inertial></link>
{joint("joint1", "base_link", "link1", 0.2)}{joint("joint2", "link1", "link2", 0.5)}
<joint name="ee_joint" type="fixed"><parent link="link2"/><child link="ee_link"/><origin xyz="0.5 0 0"/></joint>
</robot>"""


TWO_LINK_PLANAR_URDF = urdf_2link()


@functools.cache
def two_link_planar_robot() -> FreeFlyerModel:
    """The planar 2-link free-flyer of :func:`urdf_2link` (no wheels, no thrusters): two joints,
    so its floating-mode GJM (vx, vy, wz) of ``ee_link`` is tall, 3 x 2."""
    from freeflyer_control.model import load_model

    return load_model(TWO_LINK_PLANAR_URDF, base="planar", end_effectors=["ee_link"], name="planar_2link")


@functools.cache
def two_link_dynamic_singularity(q1: float = 2.0) -> tuple[float, float]:
    """(q1, q2) rad where the 2-link arm's translational GJM block (vx, vy) is singular.

    Found numerically: Brent's method on det J*_xy(q1, q2) over q2 in [0, 1] (it changes sign
    there), det from the closed form of analysis.singularity_map. Not the kinematic q2 = 0: the
    floating base recoils, so the singular elbow angle depends on the masses and on q1 (q2 =
    0.497 rad at q1 = 2 rad, where the whole 3 x 2 GJM keeps sigma_min 0.10, condition 7.3).
    """
    from scipy.optimize import brentq

    from freeflyer_control.analysis.singularity_map import singularity_sample

    ff = two_link_planar_robot()

    def det(q2: float) -> float:
        return float(singularity_sample(ff, "ee_link", np.array([[q1, q2]])).det[0])

    return q1, brentq(det, 0.0, 1.0, xtol=1e-15)


# --- hardware in the loop ------------------------------------------------------------------------
EXAMPLE_TESTBED = Path(__file__).parents[1] / "config" / "testbeds" / "planar_4link.yaml"


@functools.cache
def example_testbed():
    """The bundled example testbed config (loaded once; configs are not mutated by tests)."""
    from freeflyer_control.hil.config import load_testbed_config

    return load_testbed_config(EXAMPLE_TESTBED)


def example_variant(**changes):
    """The example testbed config with some keys (dotted paths: ``capture.axes``) set to new
    values, parsed and checked again (robot model shared with the example)."""
    from freeflyer_control.hil.config import parse_testbed_config

    data = yaml.safe_load(EXAMPLE_TESTBED.read_text())
    for dotted, value in changes.items():
        *path, key = dotted.split(".")
        node = data
        for part in path:
            node = node[part]
        node[key] = value
    return parse_testbed_config(data, source=EXAMPLE_TESTBED, robot=example_testbed().robot)
