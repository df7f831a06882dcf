"""What the emulated testbed hardware does: noise, latencies, delays, quantization, rates.

The ``emulator:`` section of a testbed config (:mod:`freeflyer_control.hil.config` checks it
when it loads the config, so a typo shows before anything runs) read into
:class:`EmulatorSettings`, with defaults for what it leaves out; the emulator
(:mod:`freeflyer_control.hil.emulator`) runs with them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.mappings import Range, refuse_unknown, section
from freeflyer_control.inputs.values import shown
from freeflyer_control.sim.limits import MAX_RATE_HZ

from .frames import axes_matrix

_LATENCY = Range(0.0, 1.0, "s", "hardware a second late is broken, not a delay to emulate")
_NOISE = "a noise std this large measures nothing"
# YAML form of the settings: (section, key) -> (field, physical range and why).
_SETTING_KEYS = {
    ("", "plant_rate"): ("plant_rate", Range(
        1.0, MAX_RATE_HZ, "Hz", f"the run-size limit of freeflyer sim, {MAX_RATE_HZ:g} Hz", lo_open=False)),
    ("", "wheel_speed_gain"): ("wheel_speed_gain", Range(
        0.0, 1e4, "1/s", "a speed loop faster than 10 kHz is no motor driver", lo_open=True)),
    ("capture", "position_noise"): ("capture_position_noise", Range(0.0, 1.0, "m", _NOISE)),
    ("capture", "attitude_noise"): ("capture_attitude_noise", Range(0.0, math.pi, "rad", _NOISE)),
    ("capture", "latency"): ("capture_latency", _LATENCY),
    ("capture", "dropout_rate"): ("capture_dropout_rate", Range(0.0, 1.0, "", "a probability")),
    ("encoders", "counts_per_rev"): ("encoder_counts_per_rev", Range(
        0.0, 2.0**32, "", "0: no quantization; 32-bit encoders count at most 2^32 a turn")),
    ("encoders", "latency"): ("encoder_latency", _LATENCY),
    ("encoders", "velocity_noise"): ("encoder_velocity_noise", Range(0.0, 1e3, "rad/s", _NOISE)),
    ("valves", "delay"): ("valve_delay", _LATENCY),
    ("commands", "latency"): ("command_latency", _LATENCY),
    ("commands", "timeout"): ("command_timeout", Range(
        0.0, 1.0, "s", "a driver watchdog slower than a second lets the joints run that long unattended",
        lo_open=True)),
}


def setting_range(name: str) -> Range:
    """The physical range of setting ``name`` (an :class:`EmulatorSettings` field)."""
    return next(rng for field, rng in _SETTING_KEYS.values() if field == name)


@dataclass(frozen=True)
class EmulatorSettings:
    """What the emulated hardware does (from ``config.emulator``, with defaults). Units SI.

    ``capture_axes`` is the TRUE axis convention of the emulated capture system (a preset name, a
    list of signed axes or a 3x3 rotation; None: the config's): it lets tests emulate a lab that
    wrote the wrong convention in its config. Only ``axes`` is replaced, not ``body_axes``.
    """

    plant_rate: float = 1000.0                 # Hz
    capture_position_noise: float = 0.0        # m std, world, added to the true base position
    capture_attitude_noise: float = 0.0        # rad std (yaw for planar, random axis for spatial)
    capture_latency: float = 0.0               # s from sample time (stamp) to delivery
    capture_dropout_rate: float = 0.0          # probability that a sample is lost
    capture_axes: np.ndarray | None = None     # world <- capture rotation, see above
    encoder_counts_per_rev: int = 0            # 0: no quantization
    encoder_latency: float = 0.0               # s
    encoder_velocity_noise: float = 0.0        # rad/s std, when velocities are reported
    valve_delay: float = 0.0                   # s, valve state follows its command this much later
    command_latency: float = 0.0               # s from a command's send time to its arrival
    command_timeout: float = 0.1               # s, joint/wheel driver watchdog
    wheel_speed_gain: float = 50.0             # 1/s, the wheel driver's speed loop

    def __post_init__(self) -> None:
        for name, rng in _SETTING_KEYS.values():
            rng.check(getattr(self, name), f"EmulatorSettings.{name}")
        if float(self.encoder_counts_per_rev) != int(self.encoder_counts_per_rev):
            raise ConfigError(f"EmulatorSettings.encoder_counts_per_rev must be a whole number (0: no quantization), "
                              f"got {self.encoder_counts_per_rev}")
        object.__setattr__(self, "encoder_counts_per_rev", int(self.encoder_counts_per_rev))
        axes = self.capture_axes
        if axes is not None:
            if isinstance(axes, str) or (not isinstance(axes, np.ndarray) and len(axes) == 3
                                         and all(isinstance(a, str) for a in axes)):
                axes = axes_matrix(axes, "EmulatorSettings.capture_axes")
            axes = np.asarray(axes, dtype=float)
            if axes.shape != (3, 3) or not np.allclose(axes @ axes.T, np.eye(3)) or np.linalg.det(axes) < 0:
                raise ConfigError("EmulatorSettings.capture_axes must be an axis convention (z-up, y-up, [x, -z, y]) "
                                  f"or a 3x3 rotation, got {shown(self.capture_axes)}")
            object.__setattr__(self, "capture_axes", axes)

    @classmethod
    def from_mapping(cls, m: Mapping | None) -> EmulatorSettings:
        """Parse the YAML form ``{plant_rate, wheel_speed_gain, capture: {position_noise,
        attitude_noise, latency, dropout_rate, axes}, encoders: {counts_per_rev, latency,
        velocity_noise}, valves: {delay}, commands: {latency, timeout}}`` (all optional).

        Raises:
            ConfigError: an unknown key, or a negative / non-finite value, naming the key.
        """
        where = "emulator"
        m = {} if m is None else m
        if not isinstance(m, Mapping):
            raise ConfigError(f"{where} must be a mapping (key: value lines), got {type(m).__name__}")
        sections = {s for s, _ in _SETTING_KEYS if s}
        refuse_unknown(m, sorted({k for s, k in _SETTING_KEYS if not s} | sections), where)
        data = {"": m}
        for s in sections:
            keys = {k for sec, k in _SETTING_KEYS if sec == s} | ({"axes"} if s == "capture" else set())
            data[s] = section(m, s, keys, where, required=False)
        kwargs = {}
        for (s, key), (name, rng) in _SETTING_KEYS.items():
            if key in data[s]:
                kwargs[name] = rng.read(data[s], key, f"{where}.{s}" if s else where)
        counts = kwargs.get("encoder_counts_per_rev", 0.0)
        if counts != int(counts):
            raise ConfigError(f"{where}.encoders.counts_per_rev must be a whole number (0: none), got {counts}")
        if "axes" in data["capture"]:
            kwargs["capture_axes"] = axes_matrix(data["capture"]["axes"], f"{where}.capture.axes")
        return cls(**kwargs)
