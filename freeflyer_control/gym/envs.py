"""The environments: a free-flyer in one maneuvering mode, its actuators driven by the agent.

The action is what a control law returns (a :class:`~freeflyer_control.control.effort.ControlEffort`
of the mode's actuators, normalised), and it takes the path every law's effort takes: the
:class:`~freeflyer_control.control.loop.ControlLoop` runs :class:`ActionLaw`, whose effort is the
action, so the guard, the allocation of the base wrench to the thrusters (or the bounded ideal
wrench) and the clipping to the actuator limits are the package's, not the environment's. The
plant is the package's (CF4 with momentum projection), compiled where numba covers the robot.

Action (``Box(-1, 1)``, float64), per entry the fraction of the actuator's limit:

* the arm joint torques (``arm_joint_names`` order), times the URDF effort limits, N m;
* rotation-floating only: the reaction-wheel torques, times their ``max_torque``, N m;
* the base wrench components the mode commands (world axes, about the base_link origin: flying
  all, rotation-flying the torque, translation-flying the force), times the base actuation's
  force (N) or torque (N m) bound (:func:`~freeflyer_control.physics.actuators.base_wrench_limits`).

Observation (``Box(-inf, inf)``, float64), SI units, not scaled:

* arm joint angles (rad) and rates (rad/s);
* base position in world (m; planar x, y; spatial x, y, z);
* base attitude (planar cos yaw, sin yaw; spatial quaternion x, y, z, w);
* base twist, world axes (planar vx, vy, wz; spatial vx, vy, vz, wx, wy, wz), m/s and rad/s;
* the end-effector position in world (m, planar x, y) and its error to the goal (goal - ee, m).

One ``step`` is one control period (``1 / rate`` s, ``substeps`` plant steps). Seeded through
``reset(seed=...)``: the goal, the start pose's noise and the pushes come from ``self.np_random``,
and the plant is deterministic, so a seed gives the same episode on every machine.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pinocchio as pin
from gymnasium import spaces

from freeflyer_control.control.law import ControlLaw
from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import Maneuver
from freeflyer_control.model import load_robot
from freeflyer_control.physics.actuators import base_wrench_limits, generalized_forces, world_wrench_to_local
from freeflyer_control.physics.kernels.plant import make_plant
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.plant import PlantDiverged
from freeflyer_control.physics.state import (
    base_position,
    base_quaternion_xyzw,
    base_rotation,
    base_twist_world,
    joint_positions,
    make_state,
)


class ActionLaw(ControlLaw):
    """The agent's action as a control law: its effort is the last action, as set by the
    environment (``command``)."""

    name = "agent"

    def __init__(self):
        super().__init__()
        self.command = None

    def prepare(self, model) -> None:
        """Nothing to load: the action is the effort."""

    def effort(self, state, reference, context):
        return self.command


class FreeFlyerEnv(gym.Env):
    """A free-flyer driven by the agent's efforts (module docstring).

    Args:
        robot: bundled robot name, robot config .yaml or .urdf (with ``base``, ``ee``).
        mode: the maneuvering mode (its actuators make the action).
        rate: control rate, Hz (one step per period).
        substeps: plant steps per control period.
        base_actuation: ``thrusters`` (allocated) or ``ideal`` (a bounded external wrench).
        compiled: the plant step on numba (None: where available).
        action_cost: weight of the mean squared action in the reward.
    """

    metadata = {"render_modes": []}

    def __init__(self, robot: str = "planar_4link", mode: str = "floating", *, rate: float = 50.0,
                 substeps: int = 10, base_actuation: str = "thrusters", compiled: bool | None = None,
                 action_cost: float = 0.01, base=None, ee=None):
        super().__init__()
        self.ff = ff = load_robot(robot, base=base, end_effectors=ee)
        if not ff.end_effectors:
            raise ValueError(f"robot '{ff.name}' names no end-effector; give ee=[FRAME]")
        self.mode = Mode.parse(mode)
        self.dt = 1.0 / float(rate)
        self.substeps = int(substeps)
        self.action_cost = float(action_cost)
        self.law = ActionLaw()
        self.loop = ControlLoop(ff, Maneuver(name="agent"), controller=self.law, mode=self.mode,
                                base_actuation=base_actuation, period=self.dt, overrun_limit=None)
        self.frame = ff.end_effectors[0]
        self.fid = ff.frame_id(self.frame)
        self.data = ff.create_data()
        self.planar = ff.base == "planar"
        self._xyz = slice(0, 2) if self.planar else slice(0, 3)
        self._layout()
        self._start = make_state(ff, joint_positions=ff.ready_pose)
        self.plant, self.plant_note = make_plant(ff, self._start, self.dt / self.substeps, compiled=compiled)
        n_obs = self._observe(self._start, np.zeros(3)).size
        self.observation_space = spaces.Box(-np.inf, np.inf, (n_obs,), dtype=np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (self._scale.size,), dtype=np.float64)
        self.goal = np.zeros(3)

    def _layout(self) -> None:
        """Where each action entry goes, and its scale (module docstring)."""
        ff = self.ff
        force, torque = base_wrench_limits(ff)
        n_arm, nw, nb = len(ff.arm_joint_names), len(ff.wheel_joint_names), ff.nb
        self._n_arm = n_arm
        self._n_wheels = nw if self.mode is Mode.ROTATION_FLOATING else 0
        self._base = base_partition(ff.base, self.mode).commanded
        n_lin = 2 if self.planar else 3
        base_scale = [force if i < n_lin else torque for i in self._base]
        self._scale = np.concatenate([ff.arm_effort_limits, ff.wheel_max_torques[:self._n_wheels], base_scale])

    def _effort(self, action: np.ndarray):
        ff, n, nw = self.ff, self._n_arm, self._n_wheels
        u = np.clip(np.asarray(action, dtype=float), -1.0, 1.0) * self._scale
        wheels = np.zeros(len(ff.wheel_joint_names))
        wheels[:nw] = u[n:n + nw]
        wrench = np.zeros(ff.nb)
        wrench[self._base] = u[n + nw:]
        return self.loop.context.joint_effort(u[:n], wheels, wrench)

    # --- observation ------------------------------------------------------------------------
    def _ee(self, state) -> np.ndarray:
        pin.framesForwardKinematics(self.ff.model, self.data, state.q)
        return self.data.oMf[self.fid].translation.copy()

    def _observe(self, state, goal) -> np.ndarray:
        ff = self.ff
        arm = ff.arm_v_indices
        q = joint_positions(ff, state.q)[arm - ff.nb]
        lin, ang = base_twist_world(ff, state)
        if self.planar:
            yaw = np.arctan2(state.q[3], state.q[2])
            attitude, twist = np.array([np.cos(yaw), np.sin(yaw)]), np.array([lin[0], lin[1], ang[2]])
        else:
            attitude, twist = base_quaternion_xyzw(ff, state.q), np.concatenate([lin, ang])
        ee = self._ee(state)[self._xyz]
        return np.concatenate([q, state.v[arm], base_position(ff, state.q)[self._xyz], attitude, twist,
                               ee, np.asarray(goal)[self._xyz] - ee])

    def _attitude_change(self, state) -> float:
        """rad: how far the base has turned from its start."""
        R = self._R0.T @ base_rotation(self.ff, state.q)
        return float(np.linalg.norm(pin.log3(R)))

    # --- the episode ------------------------------------------------------------------------
    def _start_state(self):
        """The ready pose with each arm joint moved by up to 0.05 rad (seeded)."""
        ff = self.ff
        q = dict(ff.ready_pose)
        for name in ff.arm_joint_names:
            q[name] = q.get(name, 0.0) + float(self.np_random.uniform(-0.05, 0.05))
        return make_state(ff, joint_positions=q)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        state = self._start_state()
        self.plant.state = state
        self.plant.t = 0.0
        self.loop.start(state)
        self._R0 = base_rotation(self.ff, state.q)
        self.t = 0.0
        self._begin_episode(state)
        return self._observe(state, self.goal), self._info(state)

    def _begin_episode(self, state) -> None:
        self.goal = self._ee(state)

    def _disturbance(self) -> np.ndarray:
        """The base wrench the environment pushes with now (world, about the base origin)."""
        return np.zeros(self.ff.nb)

    def step(self, action):
        action = np.asarray(action, dtype=float)
        if action.shape != self.action_space.shape or not np.isfinite(action).all():
            raise ValueError(f"action must be {self.action_space.shape} finite numbers in [-1, 1], got {action}")
        self.law.command = self._effort(action)
        state = self.plant.state
        actuation, info = self.loop.tick(self.t, state, self.dt)
        terminated, fault = False, None
        try:
            for _ in range(self.substeps):
                s = self.plant.state
                tau = generalized_forces(self.ff, s.q, actuation, s.v)
                push = self._disturbance()
                if push.any():
                    tau[:self.ff.nb] += world_wrench_to_local(self.ff, s.q, push)
                self.plant.step(tau=tau)
        except PlantDiverged as exc:
            terminated, fault = True, exc.reason
        self.t += self.dt
        state = self.plant.state
        obs = self._observe(state, self.goal)
        reward, done = self._reward(state, action)
        out = self._info(state)
        if fault:
            out["plant_diverged"] = fault
        return obs, reward, terminated or done, False, out

    def _distance(self, state) -> float:
        return float(np.linalg.norm((self.goal - self._ee(state))[self._xyz]))

    def _info(self, state) -> dict:
        return {"distance_m": self._distance(state), "base_attitude_change_rad": self._attitude_change(state),
                "t": self.t}

    def _reward(self, state, action) -> tuple[float, bool]:
        raise NotImplementedError


class ReachEnv(FreeFlyerEnv):
    """The end-effector to a goal; base attitude disturbance penalised.

    Reward per step: -(distance to the goal, m) - ``attitude_cost`` (base attitude change from
    the episode's start, rad) - ``action_cost`` mean(action^2). The episode ends (terminated)
    when the end-effector is within ``tolerance`` m of the goal.

    Goal: the end-effector's start position plus an offset of ``reach`` m (uniform in [0.5, 1]
    times it) in a random direction (in the plane for a planar robot), seeded.
    """

    def __init__(self, robot: str = "planar_4link", mode: str = "floating", *, reach: float = 0.15,
                 tolerance: float = 0.01, attitude_cost: float = 1.0, **kw):
        self.reach, self.tolerance, self.attitude_cost = float(reach), float(tolerance), float(attitude_cost)
        super().__init__(robot, mode, **kw)

    def _begin_episode(self, state) -> None:
        direction = self.np_random.normal(size=3)
        if self.planar:
            direction[2] = 0.0
        direction /= np.linalg.norm(direction)
        self.goal = self._ee(state) + self.reach * self.np_random.uniform(0.5, 1.0) * direction

    def _reward(self, state, action) -> tuple[float, bool]:
        d = self._distance(state)
        reward = -d - self.attitude_cost * self._attitude_change(state) - self.action_cost * float(np.mean(action ** 2))
        return reward, d < self.tolerance


class StationKeepEnv(FreeFlyerEnv):
    """Hold the end-effector where it starts while the base is pushed.

    Pushes: ``pushes`` pulses per episode on the base (world axes, in the plane for a planar
    robot), each ``push_time`` s long at a random time in the first half of ``horizon`` s, with
    a force of up to ``push_force`` N in a random direction (seeded). Reward per step: -(distance
    of the end-effector from its start, m) - ``action_cost`` mean(action^2). Default mode: flying
    (the thrusters and the arm both available).
    """

    def __init__(self, robot: str = "planar_4link", mode: str = "flying", *, push_force: float = 2.0,
                 push_time: float = 0.2, pushes: int = 2, horizon: float = 4.0, **kw):
        self.push_force, self.push_time, self.pushes, self.horizon = float(push_force), float(push_time), int(pushes), float(horizon)
        super().__init__(robot, mode, **kw)

    def _begin_episode(self, state) -> None:
        super()._begin_episode(state)
        self._pulses = []
        for _ in range(self.pushes):
            direction = self.np_random.normal(size=3)
            if self.planar:
                direction[2] = 0.0
            direction /= np.linalg.norm(direction)
            force = self.push_force * self.np_random.uniform(0.5, 1.0) * direction
            self._pulses.append((float(self.np_random.uniform(0.0, 0.5 * self.horizon)), force))

    def _disturbance(self) -> np.ndarray:
        push = np.zeros(self.ff.nb)
        t = self.plant.t
        for start, force in self._pulses:
            if start <= t < start + self.push_time:
                push[:2 if self.planar else 3] += force[:2 if self.planar else 3]
        return push

    def _reward(self, state, action) -> tuple[float, bool]:
        return -self._distance(state) - self.action_cost * float(np.mean(action ** 2)), False
