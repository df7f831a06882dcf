"""Finding a control law by name: what the command line, campaign specs, the Gymnasium
environment and the ROS nodes share (below all of them, above control).

A law is named

* by an import path, ``module:Class`` (``my_lab.laws:SlidingMode``): the module is imported
  (from ``sys.path``, with the working directory appended, as ``python -m`` has it) and the class
  taken from it; or
* by a name that an installed distribution registers under the entry-point group
  :data:`ENTRY_POINT_GROUP` (``freeflyer_control.controllers``), e.g. in its setup.py::

      entry_points={"freeflyer_control.controllers": ["sliding_mode = my_lab.laws:SlidingMode"]}

  so that ``pip install my-lab-laws`` makes ``--controller sliding_mode`` work. This package
  registers its own three the same way (setup.py); they are found by name even where the
  package's metadata is not installed (a source checkout on ``PYTHONPATH``).

Naming a law imports code: the command line and campaign specs do it on the user's word; on
``controller_node`` the loadable laws are fixed by a read-only parameter at launch, and nothing
set over the ROS graph imports anything.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Iterable, Mapping

from freeflyer_control.control.builtin import BUILTIN_LAWS
from freeflyer_control.control.law import ControlLaw
from freeflyer_control.inputs.values import shown

ENTRY_POINT_GROUP = "freeflyer_control.controllers"
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class LawEntry:
    """One law that can be named: ``name``, where it comes from (``target``, an import path) and
    which distribution registered it (``source``: ``built-in`` or a distribution's name)."""

    name: str
    target: str
    source: str

    def load(self) -> type[ControlLaw]:
        return load_law_class(self.target)


def available() -> dict[str, LawEntry]:
    """Every law that can be named without an import path: the built-in three, then the entry
    points of installed distributions (sorted by name). A name registered twice for different
    classes is kept once, the first (built-in first), with the others in ``clashes()``."""
    found: dict[str, LawEntry] = {}
    for name, cls in BUILTIN_LAWS.items():
        found[name] = LawEntry(name, f"{cls.__module__}:{cls.__qualname__}", "built-in")
    for entry in _entry_points():
        if entry.name not in found:
            found[entry.name] = entry
    return found


def clashes() -> list[str]:
    """One line per name registered for two different classes (the second is not used)."""
    seen = {name: e.target for name, e in available().items()}
    return [f"'{e.name}' from {e.source} ({e.target}) is shadowed by {seen[e.name]}"
            for e in _entry_points() if seen.get(e.name) not in (None, e.target)]


def _entry_points() -> list[LawEntry]:
    out = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        source = "built-in" if dist is not None and dist.name == "freeflyer_control" else \
            (dist.name if dist is not None else "an installed package")
        out.append(LawEntry(ep.name, ep.value, source))
    return out


def load_law_class(spec: str) -> type[ControlLaw]:
    """The law class named by ``spec`` (an import path or an available name).

    Raises:
        ValueError: one line saying what is wrong and what would work.
    """
    spec = str(spec).strip()
    if spec in BUILTIN_LAWS:  # what available() would give (a built-in name is never shadowed),
        return BUILTIN_LAWS[spec]  # without reading every installed distribution's entry points
    if ":" not in spec:
        entry = available().get(spec)
        if entry is None:
            names = ", ".join(available())
            raise ValueError(f"unknown controller {shown(spec)}; available: {names} (freeflyer controllers lists "
                             "them), or give an import path module:Class")
        return load_law_class(entry.target)
    if not _IMPORT_PATH.match(spec):
        raise ValueError(f"controller {shown(spec)} is not an import path; write module:Class, e.g. my_lab.laws:SlidingMode")
    module_name, qualname = spec.split(":", 1)
    cwd = os.getcwd()
    if cwd not in sys.path:  # as `python -m` has it: a lab's module beside where the command runs
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(f"controller {shown(spec)}: module '{exc.name}' not found; install it or put its folder "
                         "on PYTHONPATH") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: say why in one line
        raise ValueError(f"controller {shown(spec)}: importing {module_name} raised {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())}") from None
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ValueError(f"controller {shown(spec)}: {module_name} has no '{qualname}'")
    if not (inspect.isclass(obj) and issubclass(obj, ControlLaw)):
        raise ValueError(f"controller {shown(spec)} is not a control law: derive it from "
                         "freeflyer_control.control.law.ControlLaw")
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(obj.__abstractmethods__))
        raise ValueError(f"controller {shown(spec)} does not implement {missing}")
    return obj


def make_law(spec: str | ControlLaw, params: Mapping[str, Any] | None = None) -> ControlLaw:
    """A law object from a name or import path and its parameter values (strings are parsed;
    checked against the law's declaration). A law object is returned as it is (no params)."""
    if isinstance(spec, ControlLaw):
        if params:
            raise ValueError(f"controller parameters go to the law's constructor; {spec.label()} is already made")
        return spec
    cls = load_law_class(spec)
    return cls(**dict(params or {}))


def parse_assignments(items: Iterable[str], option: str = "--controller-param") -> dict[str, str]:
    """["k=2", "mode=fast"] -> {"k": "2", "mode": "fast"}: the values stay text, the law's
    declaration parses them. Refuses an item without '=' or a key given twice."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"{option} '{item}' must look like NAME=VALUE, e.g. {option} kp=2.0")
        if key in out:
            raise ValueError(f"{option} {key} is given twice; give each parameter once")
        out[key] = value.strip()
    return out


def describe(entry: LawEntry) -> str:
    """One line for ``freeflyer controllers``: name, source, the law's summary, how many
    parameters it declares."""
    try:
        cls = entry.load()
    except ValueError as exc:
        return f"{entry.name:<16} {entry.source:<10} cannot be loaded: {exc}"
    n = len(cls.parameters)
    return f"{entry.name:<16} {entry.source:<10} {cls.summary().rstrip('.')} ({n} parameter{'s' if n != 1 else ''})"


def parameter_table(cls: type[ControlLaw]) -> list[tuple[str, str, str, str]]:
    """(name, default, accepted, description) of each declared parameter."""
    return [(p.name, repr(p.default), p.accepted(), p.description) for p in cls.parameters]
