"""The control laws a controller node may run, fixed at launch (the node's read-only
``controllers`` parameter), with their parameters in the ``controller_params.<law>.<name>``
namespace.

Loading a law imports code, so it happens here, once, from launch-time values; switching laws at
run time (the ``controller`` parameter) chooses among the loaded ones by name and never imports
anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from freeflyer_control.control.law import ControlLaw, Parameter
from freeflyer_control.laws import load_law_class

PARAM_PREFIX = "controller_params"


def not_loaded(spec: str, loaded) -> str:
    """The refusal of a switch to a law that was not loaded at launch (one line)."""
    return (f"controller '{spec}' is not loaded; the loaded laws are {list(loaded)} (the read-only parameter "
            "controllers fixes them at launch)")


@dataclass(frozen=True)
class LawSet:
    """The loadable law classes: ``classes`` by name (the law's own name), ``aliases`` the
    specs as given (an import path names its law too)."""

    classes: dict[str, type[ControlLaw]]
    aliases: dict[str, str]

    @classmethod
    def load(cls, specs: Sequence[str], initial: str = "") -> "LawSet":
        """Load the laws named by ``specs`` (names or import paths) and ``initial`` (the law to
        start with, added if it is not among them). Raises ValueError (one line) for a law that
        cannot be loaded or two laws of one name."""
        classes: dict[str, type[ControlLaw]] = {}
        aliases: dict[str, str] = {}
        for spec in [s for s in specs if s] + ([initial] if initial else []):
            if spec in aliases:
                continue
            law = load_law_class(spec)
            name = law.label()
            if name in classes and classes[name] is not law:
                raise ValueError(f"controllers: two laws are called '{name}' ({classes[name].__module__} and "
                                 f"{law.__module__}); give one of them another name")
            classes[name] = law
            aliases[spec] = aliases[name] = name
        if not classes:
            raise ValueError("controllers is empty: list at least one law (a name or module:Class)")
        return cls(classes, aliases)

    def name_of(self, spec: str) -> str:
        """The loaded law's name for ``spec`` (its name or the import path it was loaded by)."""
        name = self.aliases.get(spec)
        if name is None:
            raise ValueError(not_loaded(spec, self.classes))
        return name

    def declarations(self) -> list[tuple[str, Parameter]]:
        """(ROS parameter name, the law's declaration) of every law's parameters."""
        return [(f"{PARAM_PREFIX}.{name}.{p.name}", p) for name, law in self.classes.items() for p in law.parameters]

    def build(self, values: Mapping[str, Any]) -> dict[str, ControlLaw]:
        """One law object per loaded law, with its parameters from ``values`` (keyed by the ROS
        parameter names of :meth:`declarations`; missing ones take their defaults)."""
        out = {}
        for name, law in self.classes.items():
            prefix = f"{PARAM_PREFIX}.{name}."
            given = {key[len(prefix):]: value for key, value in values.items() if key.startswith(prefix)}
            defaults = {p.name: p.default for p in law.parameters}
            out[name] = law(**{k: v for k, v in given.items() if v != defaults.get(k, object())})
        return out
