"""The distributions a campaign spec draws its dispersions from.

YAML forms (``where`` names the spec key in messages):

* a number or a word: that value in every run;
* ``{uniform: [lo, hi]}``;
* ``{normal: [mean, std], min: a, max: b}``: a normal truncated to [a, b] (either bound optional),
  drawn by rejection so the law inside the bounds is exactly the normal's;
* ``{choice: [v1, v2, ...], p: [p1, p2, ...]}`` (p optional: equally likely).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from freeflyer_control.inputs.values import shown

# A truncated normal whose bounds keep less than this probability would take forever to draw.
MIN_TRUNCATED_MASS = 1e-6
# How far an untruncated side of a normal reaches, in standard deviations, when its values are
# checked against a physical range: beyond 8 std lies a fraction 6e-16 of the draws.
NORMAL_REACH = 8.0


@dataclass(frozen=True)
class Distribution:
    """kind: constant, uniform, normal or choice; args: its parameters (see module docstring)."""

    kind: str
    args: tuple
    lo: float = -math.inf   # truncation of a normal
    hi: float = math.inf
    p: tuple[float, ...] | None = None

    def support(self) -> tuple:
        """The values a draw can take: (lo, hi) for numbers, the choices for a choice."""
        if self.kind == "constant":
            return (self.args[0], self.args[0])
        if self.kind == "uniform":
            return self.args
        if self.kind == "normal":
            return (self.lo, self.hi)
        return tuple(self.args)

    def reach(self) -> tuple:
        """The values a draw takes in practice: :meth:`support`, with an untruncated side of a
        normal cut at NORMAL_REACH standard deviations from the mean."""
        if self.kind != "normal":
            return self.support()
        mean, std = self.args
        return (max(self.lo, mean - NORMAL_REACH * std), min(self.hi, mean + NORMAL_REACH * std))

    def draw(self, rng: np.random.Generator, n: int | None = None):
        """One value (``n`` None) or ``n`` independent values."""
        count = 1 if n is None else n
        if self.kind == "constant":
            out = [self.args[0]] * count
        elif self.kind == "uniform":
            out = list(rng.uniform(self.args[0], self.args[1], count))
        elif self.kind == "normal":
            out = [self._truncated_normal(rng) for _ in range(count)]
        else:
            idx = rng.choice(len(self.args), size=count, p=self.p)
            out = [self.args[int(i)] for i in idx]
        out = [float(v) if _is_number(v) else v for v in out]
        return out[0] if n is None else out

    def _truncated_normal(self, rng: np.random.Generator) -> float:
        mean, std = self.args
        while True:  # the acceptance probability is >= MIN_TRUNCATED_MASS (checked at parse)
            x = rng.normal(mean, std)
            if self.lo <= x <= self.hi:
                return float(x)

    def describe(self) -> str:
        if self.kind == "constant":
            return f"{self.args[0]:g}" if _is_number(self.args[0]) else shown(self.args[0])
        if self.kind == "uniform":
            return f"uniform [{self.args[0]:g}, {self.args[1]:g}]"
        if self.kind == "normal":
            return f"normal({self.args[0]:g}, {self.args[1]:g}) in [{self.lo:g}, {self.hi:g}]"
        return f"choice of {shown(list(self.args), 120)}"


def _normal_mass(mean: float, std: float, lo: float, hi: float) -> float:
    """The probability of [lo, hi] under normal(mean, std > 0), by the complementary error
    function on the side of the mean where the interval lies (no cancellation in a far tail)."""
    with np.errstate(all="ignore"):  # a std of 1e-300 divides to inf: all the mass at the mean
        z_lo, z_hi = (lo - mean) / (std * math.sqrt(2.0)), (hi - mean) / (std * math.sqrt(2.0))
    if z_lo >= 0:
        return 0.5 * (math.erfc(z_lo) - math.erfc(z_hi))
    if z_hi <= 0:
        return 0.5 * (math.erfc(-z_hi) - math.erfc(-z_lo))
    return 1.0 - 0.5 * (math.erfc(-z_lo) + math.erfc(z_hi))


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v, where: str) -> float:
    if not _is_number(v) or not math.isfinite(v):
        raise ValueError(f"{where}: {shown(v)} is not a finite number; write a number such as 0.1")
    return float(v)


def parse_distribution(value, where: str) -> Distribution:
    """A :class:`Distribution` from its YAML form.

    Raises:
        ValueError: one line naming ``where``, what is wrong and how to write it.
    """
    if _is_number(value):
        return Distribution("constant", (_finite(value, where),))
    if isinstance(value, str):
        return Distribution("constant", (value,))
    forms = "{uniform: [lo, hi]}, {normal: [mean, std], min: lo, max: hi}, {choice: [...], p: [...]} or a number"
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {shown(value)} is not a distribution; write {forms}")
    kinds = [k for k in ("uniform", "normal", "choice") if k in value]
    if len(kinds) != 1:
        raise ValueError(f"{where}: give exactly one of uniform, normal, choice; write {forms}")
    kind = kinds[0]
    allowed = {"uniform": {"uniform"}, "normal": {"normal", "min", "max"}, "choice": {"choice", "p"}}[kind]
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key {shown(unknown[0])} in a {kind} distribution; "
                         f"its keys are {', '.join(sorted(allowed))}")
    args = value[kind]
    if kind == "choice":
        return _choice(args, value.get("p"), where)
    if not isinstance(args, (list, tuple)) or len(args) != 2:
        shape = "[lo, hi]" if kind == "uniform" else "[mean, std]"
        raise ValueError(f"{where}: {kind} takes two numbers {shape}, got {shown(args)}")
    a, b = (_finite(x, f"{where}.{kind}") for x in args)
    if kind == "uniform":
        if b < a:
            raise ValueError(f"{where}: uniform [{a:g}, {b:g}] has lo > hi; write [{b:g}, {a:g}]")
        return Distribution("uniform", (a, b))
    if b < 0:
        raise ValueError(f"{where}: normal std {b:g} is negative; give a std >= 0")
    lo = _finite(value["min"], f"{where}.min") if "min" in value else -math.inf
    hi = _finite(value["max"], f"{where}.max") if "max" in value else math.inf
    if hi < lo:
        raise ValueError(f"{where}: min {lo:g} > max {hi:g}; swap them")
    if b == 0:
        if not lo <= a <= hi:
            raise ValueError(f"{where}: a normal of std 0 at {a:g} lies outside [min, max]; widen the bounds")
    else:
        mass = _normal_mass(a, b, lo, hi)
        if mass < MIN_TRUNCATED_MASS:
            raise ValueError(f"{where}: [min, max] = [{lo:g}, {hi:g}] holds almost none of normal({a:g}, {b:g}) "
                             "(probability below 1e-6); move the bounds towards the mean")
    return Distribution("normal", (a, b), lo, hi)


def _choice(args, p, where: str) -> Distribution:
    if not isinstance(args, (list, tuple)) or not args:
        raise ValueError(f"{where}: choice takes a non-empty list, got {shown(args)}")
    for v in args:
        if _is_number(v):
            _finite(v, f"{where}.choice")
        elif not isinstance(v, str):
            raise ValueError(f"{where}: choice values are numbers or words, got {shown(v)}")
    if p is None:
        return Distribution("choice", tuple(args))
    if not isinstance(p, (list, tuple)) or len(p) != len(args):
        raise ValueError(f"{where}: p must list one probability per choice ({len(args)}), got {shown(p)}")
    probs = [_finite(x, f"{where}.p") for x in p]
    if min(probs) < 0 or abs(sum(probs) - 1.0) > 1e-9:
        raise ValueError(f"{where}: p must be probabilities >= 0 summing to 1, got {list(p)} (sum {sum(probs):g})")
    return Distribution("choice", tuple(args), p=tuple(probs))
