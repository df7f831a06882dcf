"""Values read from a YAML mapping (a config file's section), checked as they are read.

Every message names the key by its full path in the file (``limits.base_speed``) and says what
is accepted, so a user can fix the file without reading our source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from freeflyer_control.errors import ConfigError


def section(data: Mapping[str, Any], key: str, known: set[str], where: str = "", required: bool = True) -> dict:
    """The mapping ``data[key]`` (``{}`` when absent and not ``required``), refused when it is not
    a mapping or holds a key outside ``known``; ``where``: the path of ``data`` in the file."""
    path = f"{where}.{key}" if where else key
    value = data.get(key)
    if value is None:
        if required:
            raise ConfigError(f"missing section '{path}'")
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a mapping (key: value lines), got {value!r}")
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; known keys: {sorted(known)}")
    return dict(value)


def number(data: Mapping[str, Any], key: str, where: str, default: float | None = None,
            minimum: float = 0.0, strict: bool = False) -> float:
    """The finite number ``data[key]`` >= ``minimum`` (> with ``strict``), or ``default`` when
    absent (refused when absent without a default); ``where``: the path of ``data`` in the file."""
    path = f"{where}.{key}" if where else key
    if key not in data or data[key] is None:
        if default is None:
            raise ConfigError(f"missing key '{path}'")
        return float(default)
    try:
        x = float(data[key])
    except (TypeError, ValueError):
        raise ConfigError(f"{path} must be a number, got {data[key]!r}") from None
    if not np.isfinite(x) or x < minimum or (strict and x == minimum):
        raise ConfigError(f"{path} must be a finite number {'>' if strict else '>='} {minimum}, got {x}")
    return x
