"""The bundled robots, by name, and a single entry point for "a name or a URDF path"."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from freeflyer_control.errors import ModelError
from freeflyer_control.model.config import load_robot_config
from freeflyer_control.model.loader import FreeFlyerModel, load_model
from freeflyer_control.resources import share_dir

DEFAULT_ROBOT = "planar_4link"


def robot_config_dir() -> Path:
    return share_dir() / "config" / "robots"


def robot_names() -> list[str]:
    """Names of the bundled robots (one robot config YAML each)."""
    return sorted(p.stem for p in robot_config_dir().glob("*.yaml"))


def load_robot(
    robot: str | Path,
    *,
    base: str | None = None,
    end_effectors: Sequence[str] | None = None,
    root: str | None = None,
    floating_only: bool = False,
) -> FreeFlyerModel:
    """Load a bundled robot by name, a robot config YAML, or a URDF file.

    Args:
        robot: a bundled name (see :func:`robot_names`), a ``.yaml`` robot config path, or a
            ``.urdf`` path (then ``base`` is needed unless the URDF has a floating root joint).
        base, end_effectors: override or complete the config (see :func:`load_model`).
        root, floating_only: float another link as the base (see :func:`load_model`).
    """
    text = str(robot)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        config = load_robot_config(path)
        if config.urdf is None:
            raise ModelError(f"robot config '{path}' has no 'urdf:' entry naming its URDF")
        return load_model(config.urdf, config, base=base, end_effectors=end_effectors,
                          root=root, floating_only=floating_only)
    if path.suffix in (".urdf", ".xml") or text.lstrip().startswith("<"):
        return load_model(text if text.lstrip().startswith("<") else path, None,
                          base=base, end_effectors=end_effectors, root=root)
    config_path = robot_config_dir() / f"{text}.yaml"
    if not config_path.is_file():
        raise ModelError(
            f"unknown robot '{text}'; bundled robots: {robot_names()}, or give a .urdf or "
            ".yaml path"
        )
    return load_robot(config_path, base=base, end_effectors=end_effectors, root=root,
                      floating_only=floating_only)


def urdf_path(robot: str | Path) -> Path | None:
    """The URDF file behind ``robot`` (as :func:`load_robot` takes it): the one a bundled robot
    or a robot config names, or the ``.urdf`` path itself; None for URDF text or a config
    without one. Relative mesh paths in the URDF are relative to its folder."""
    text = str(robot)
    if text.lstrip().startswith("<"):
        return None
    path = Path(text)
    if path.suffix in (".urdf", ".xml"):
        return path
    if path.suffix not in (".yaml", ".yml"):
        path = robot_config_dir() / f"{text}.yaml"
    if not path.is_file():
        return None
    return load_robot_config(path).urdf
