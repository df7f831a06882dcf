"""Fuzz of the simulated plant's entry point (``runtime.plant_server.PlantServer``), what
plant_node calls from its subscriptions and its timer.

For every bundled robot, servers at 10 Hz (where commands at their limits make the plant
diverge), 100 Hz and 1 kHz take a random stream of: commands (arm efforts, wheel torques,
thruster forces, base wrenches) with NaN, Inf, 1e154, 1e308 and wrong lengths, stamped at
adversarial times; steps at adversarial times (forward, jittered, stepped back by seconds, NaN,
+-Inf, 1e308); resets. A share of the inputs builds a server with an adversarial rate, command
timeout and latency instead. The claims, for every input:

* no exception escapes, except the refusals of the server's contract: ``MessageError`` from a
  command setter (plant_node counts it) and ``ValueError`` from the constructor;
* every measurement the server would publish, and every diagnostic number, is finite;
* the status is ``ok`` or ``diverged``; when it is not ``ok`` the server publishes nothing
  (``measurement()`` is None) and says why.

``FREEFLYER_FUZZ_N`` sets the number of inputs (default 10^4, a few seconds).
"""

from __future__ import annotations

import numpy as np
from conftest import BUNDLED_ROBOTS, robot
from fuzz_support import adversarial_float, adversarial_vector, fuzz_count, fuzz_rng

from freeflyer_control.physics.state import make_state
from freeflyer_control.ros.conversions import MessageError
from freeflyer_control.runtime.plant_server import PlantServer

RATES = (10.0, 100.0, 1000.0)
SETTERS = ("set_arm_torques", "set_wheel_torques", "set_thruster_forces", "set_base_wrench_world")


def _sizes(ff) -> dict[str, int]:
    return {"set_arm_torques": len(ff.arm_joint_names), "set_wheel_torques": len(ff.wheel_joint_names),
            "set_thruster_forces": len(ff.thrusters), "set_base_wrench_world": 6}


def _typical(ff, setter: str) -> float:
    """The scale of a plausible command: the actuators' own limits (N m, N)."""
    if setter == "set_arm_torques":
        return float(ff.arm_effort_limits.max())
    if setter == "set_wheel_torques":
        return float(ff.wheel_max_torques.max(initial=0.1))
    return 1.0


def _time(rng: np.random.Generator, now: float) -> float:
    """The next time a callback sees: mostly a step on, sometimes jittered, back, or absurd."""
    pick = rng.random()
    if pick < 0.7:
        return now + 0.01
    if pick < 0.8:
        return now + float(rng.normal(0.0, 0.05))
    if pick < 0.9:
        return now - float(rng.uniform(0.5, 20.0))  # the clock stepped back
    return adversarial_float(rng, 10.0)


def _check_outputs(server: PlantServer) -> None:
    assert server.status in ("ok", "diverged"), server.status
    d = server.diagnostics()
    for key in ("t", "linear_momentum", "angular_momentum"):
        assert np.isfinite(d[key]), (key, d[key])
    m = server.measurement()
    if server.status != "ok":
        assert m is None, "a server that is not ok must publish nothing"
        assert server.reason.startswith("plant diverged at t = ") and "\n" not in server.reason
        return
    b = m.base
    for name, values in (("joint_positions", m.joint_positions), ("joint_velocities", m.joint_velocities),
                         ("base position", b.position), ("base orientation", b.orientation_xyzw),
                         ("base linear velocity", b.linear_velocity),
                         ("base angular velocity", b.angular_velocity)):
        assert np.isfinite(values).all(), (name, values)


def _adversarial_server(rng: np.random.Generator, ff) -> PlantServer | None:
    """A server built from adversarial parameters, or None when the constructor refuses them."""
    rate = adversarial_float(rng, 100.0) if rng.random() < 0.7 else float(rng.choice((1.0, 10.0, 5000.0)))
    timeout = adversarial_float(rng, 0.1) if rng.random() < 0.5 else 0.1
    latency = adversarial_float(rng, 0.01) if rng.random() < 0.5 else 0.0
    try:
        return PlantServer(ff, make_state(ff), rate=rate, command_timeout=timeout, latency=latency)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return None


def test_fuzz_plant_server_step_commands_and_time():
    rng = fuzz_rng(salt=3)
    n = fuzz_count()
    servers = [(robot(name), PlantServer(robot(name), make_state(robot(name)), rate=rate))
               for name in BUNDLED_ROBOTS for rate in RATES]
    now = [0.0] * len(servers)
    seen = {"ok": 0, "diverged": 0, "refused": 0, "built": 0}
    with np.errstate(all="ignore"):  # overflow inside a diverging step is the point of the exercise
        for _ in range(n):
            i = int(rng.integers(len(servers)))
            ff, server = servers[i]
            pick = rng.random()
            if pick < 0.03:
                built = _adversarial_server(rng, ff)
                if built is not None:
                    seen["built"] += 1
                    built.set_arm_torques(ff.arm_effort_limits, 0.0)
                    built.step(0.0)
                    _check_outputs(built)
                continue
            if pick < 0.05:
                server.reset()
            elif pick < 0.5:
                setter = str(rng.choice(SETTERS))
                size = _sizes(ff)[setter]
                if rng.random() < 0.1:
                    size = int(rng.integers(0, size + 3))  # a wrong length (or, rarely, the right one)
                values = adversarial_vector(rng, size, _typical(ff, setter))
                try:
                    getattr(server, setter)(values, _time(rng, now[i]))
                except MessageError as exc:
                    seen["refused"] += 1
                    assert str(exc) and "\n" not in str(exc)
            else:
                now[i] = _time(rng, now[i])
                reason = server.step(now[i])
                assert reason is None or reason == server.reason
            seen[server.status] += 1
            _check_outputs(server)
    # The stream must have reached both statuses and the refusals, or it proved little.
    assert seen["ok"] and seen["diverged"] and seen["refused"], seen
