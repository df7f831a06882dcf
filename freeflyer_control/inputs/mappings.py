"""Values read from a YAML mapping (a config file's section), checked as they are read.

Every config reader of the package (robot, object, testbed, campaign spec) reads its numbers,
names and sections through this module, so each refuses the same things the same way:

* a boolean where a number belongs (YAML reads ``true``, ``yes``, ``on`` as booleans: taken as
  1, they would pass silently);
* the text YAML makes of an exponent without a decimal point or without a sign (PyYAML
  follows YAML 1.1: ``1e-3`` and ``1.0e3`` are text, ``1.0e-3`` and ``1.0e+3`` are numbers):
  the message says how to write it;
* a number outside its physical range, with the reason for the range;
* a key the section does not know (a typo such as ``rot:`` for ``rpy:`` would otherwise leave
  the default in force), naming the nearest known key.

Every message names the key by its full path in the file (``limits.base_speed``), quotes what
was given cut to one short line, and says what is accepted.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from freeflyer_control.errors import ConfigError

from .values import Number, shown

# An exponent YAML 1.1 reads as text: no decimal point (1e-3), or no sign after the e (1.0e3).
_TEXT_EXPONENT = re.compile(r"\s*([-+]?)(\d[\d_]*)?(\.\d*)?[eE]([-+]?)(\d+)\s*")
# Names in configs (robots, joints, topics, frames) are short; a longer one is a mistake.
MAX_NAME_CHARS = 200
# Known keys listed in a refusal (the nearest first) before the list is cut.
_KEYS_SHOWN = 12


def _kind(value: Any) -> str:
    """What YAML made of ``value``, for a refusal."""
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()} (YAML reads true/false, yes/no, on/off as booleans)"
    if isinstance(value, str):
        return f"the text {shown(value)}"
    if isinstance(value, Mapping):
        return "a mapping (key: value lines)"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return f"{value:g}" if isinstance(value, (float, np.floating)) else f"{value:d}"
    return shown(value)


def exponent_advice(value: Any) -> str:
    """How to write ``value`` (text YAML read from an exponent) as a YAML number, or ''."""
    if not isinstance(value, str):
        return ""
    m = _TEXT_EXPONENT.fullmatch(value)
    if m is not None and _yaml_float(value):
        return "; it is quoted: write the number without quotes"
    if m is None or not (m.group(2) or (m.group(3) or "") not in ("", ".")):
        return ""
    sign, whole, frac, exp_sign, exp = m.groups()
    mantissa = f"{whole or '0'}{frac if frac and frac != '.' else '.0'}"
    return (f"; YAML reads an exponent without a decimal point or without a sign as text: "
            f"write {sign}{mantissa}e{exp_sign or '+'}{exp}")


def _yaml_float(text: str) -> bool:
    """Whether YAML reads ``text`` (a number's text, unquoted) as a float."""
    try:
        return isinstance(yaml.safe_load(text), float)
    except yaml.YAMLError:
        return False


def value_number(value: Any, path: str, *, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, hi_open: bool = False, unit: str = "", why: str = "") -> float:
    """``value`` as a finite float in [lo, hi] (ends excluded with ``lo_open`` / ``hi_open``).

    ``path`` names it in the refusal, ``why`` says why the range is what it is (given whenever
    a range is: a limit nobody can tell the reason of looks arbitrary and gets "fixed" wrong).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        unit_text = f" ({unit})" if unit else ""
        raise ConfigError(f"{path} must be a number{unit_text}, got {_kind(value)}{exponent_advice(value)}")
    x = float(value)
    rng = Number(lo, hi, lo_open=lo_open, hi_open=hi_open, unit=unit)
    if not rng.accepts(x):
        reason = f" ({why})" if why and math.isfinite(x) else ""
        raise ConfigError(f"{path} must be {rng.describe()}{reason}, got {x:g}")
    return x


def value_whole(value: Any, path: str, lo: int, hi: int | None = None, why: str = "") -> int:
    """``value`` as a whole number in [lo, hi] (a float with no fraction is refused too: YAML
    wrote it with a decimal point, so it was meant as something else, or is a typo)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        advice = ""
        if isinstance(value, (float, np.floating)) and float(value).is_integer() and abs(value) < 1e18:
            advice = f"; write {int(value):d}, without a decimal point"
        elif exponent_advice(value):
            digits = float(value.replace("_", ""))
            if digits.is_integer() and abs(digits) < 1e18:
                advice = f"; YAML reads {value.strip()} as text: write the digits, {int(digits):d}"
        raise ConfigError(f"{path} must be a whole number, got {_kind(value)}{advice}")
    n = int(value)
    if n < lo or (hi is not None and n > hi):
        limits = f">= {lo}" if hi is None else f"from {lo} to {hi}"
        reason = f" ({why})" if why else ""
        raise ConfigError(f"{path} must be a whole number {limits}{reason}, got {n}")
    return n


def value_text(value: Any, path: str, max_chars: int = MAX_NAME_CHARS, what: str = "a name") -> str:
    """``value`` as a non-empty string of at most ``max_chars`` characters (names, topics, paths)."""
    if not isinstance(value, str):
        raise ConfigError(f"{path} must be {what}, got {_kind(value)}")
    if not value.strip():
        raise ConfigError(f"{path} must be {what}, got an empty text")
    if len(value) > max_chars:
        raise ConfigError(f"{path} must be {what} of at most {max_chars} characters, got {len(value)} "
                          f"characters ({shown(value)})")
    return value


def nearest(key: Any, known: Iterable[str]) -> list[str]:
    """The known keys, the one most like ``key`` first."""
    text = str(key)
    return sorted(known, key=lambda k: (-difflib.SequenceMatcher(None, text, k).ratio(), k))


def refuse_unknown(data: Mapping[str, Any], known: Iterable[str], path: str) -> None:
    """Refuse the first key of ``data`` outside ``known``, naming it and the nearest known key."""
    known = list(known)
    for key in data:
        if key not in known:
            ranked = nearest(key, known)
            listed = ", ".join(ranked[:_KEYS_SHOWN]) + (", ..." if len(ranked) > _KEYS_SHOWN else "")
            hint = f"; did you mean '{ranked[0]}'? (known keys: {listed})" if ranked else "; it takes no keys"
            raise ConfigError(f"{path}: unknown key {shown(key)}{hint}")


def mapping(value: Any, path: str, known: Iterable[str] | None = None) -> dict:
    """``value`` as a dict (``{}`` for an empty value), refusing other types and, with ``known``,
    unknown keys."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a mapping (key: value lines), got {_kind(value)}")
    if known is not None:
        refuse_unknown(value, known, path)
    return dict(value)


def section(data: Mapping[str, Any], key: str, known: set[str], where: str = "", required: bool = True) -> dict:
    """The mapping ``data[key]`` (``{}`` when absent and not ``required``), refused when it is not
    a mapping or holds a key outside ``known``; ``where``: the path of ``data`` in the file."""
    path = f"{where}.{key}" if where else key
    value = data.get(key)
    if value is None and required:
        raise ConfigError(f"missing section '{path}'")
    return mapping(value, path, known)


def number(data: Mapping[str, Any], key: str, where: str, default: float | None = None,
           minimum: float = 0.0, strict: bool = False, maximum: float | None = None, unit: str = "",
           why: str = "") -> float:
    """The finite number ``data[key]`` >= ``minimum`` (> with ``strict``) and <= ``maximum``,
    or ``default`` when absent (refused when absent without a default); ``where``: the path of
    ``data`` in the file; ``why``: the reason for the range (see :func:`value_number`)."""
    path = f"{where}.{key}" if where else key
    if key not in data or data[key] is None:
        if default is None:
            raise ConfigError(f"missing key '{path}'")
        return float(default)
    return value_number(data[key], path, lo=minimum, hi=maximum, lo_open=strict, unit=unit, why=why)


def vector(value: Any, path: str, size: int = 3, *, bound: float | None = None, unit: str = "",
           why: str = "") -> np.ndarray:
    """A list of ``size`` finite numbers, each within +-``bound`` when given."""
    if not isinstance(value, (list, tuple)) or len(value) != size:
        unit_text = f" ({unit})" if unit else ""
        raise ConfigError(f"{path} must be a list of {size} numbers{unit_text}, got {_kind(value)}")
    lo = -bound if bound is not None else None
    return np.array([value_number(v, f"{path}[{i}]", lo=lo, hi=bound, unit=unit, why=why)
                     for i, v in enumerate(value)], dtype=float)


@dataclass(frozen=True)
class Range:
    """The physical range of a config value, its unit, and why the range is what it is.

    ``read(data, key, where, default)`` reads ``data[key]`` as :func:`number` does, refusing a
    value outside the range with the reason; ``check(value, path)`` checks a value in hand.
    """

    lo: float | None
    hi: float | None
    unit: str = ""
    why: str = ""
    lo_open: bool = False
    hi_open: bool = False

    def check(self, value: Any, path: str) -> float:
        return value_number(value, path, lo=self.lo, hi=self.hi, lo_open=self.lo_open, hi_open=self.hi_open,
                            unit=self.unit, why=self.why)

    def read(self, data: Mapping[str, Any], key: str, where: str, default: float | None = None) -> float:
        path = f"{where}.{key}" if where else key
        if key not in data or data[key] is None:
            if default is None:
                raise ConfigError(f"missing key '{path}'")
            return float(default)
        return self.check(data[key], path)

    def contains(self, x: float) -> bool:
        return Number(self.lo, self.hi, lo_open=self.lo_open, hi_open=self.hi_open).accepts(x)

    def describe(self) -> str:
        return Number(self.lo, self.hi, lo_open=self.lo_open, hi_open=self.hi_open, unit=self.unit).describe()
