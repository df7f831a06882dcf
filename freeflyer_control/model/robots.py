"""The bundled robots, by name, and a single entry point for "a name or a URDF path"."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

from freeflyer_control.errors import ModelError
from freeflyer_control.inputs.values import shown
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
    if len(text) > 200 or "\x00" in text or not config_path.is_file():
        raise ModelError(
            f"unknown robot {shown(text)}; bundled robots: {robot_names()}, or give a .urdf or "
            ".yaml path"
        )
    return load_robot(config_path, base=base, end_effectors=end_effectors, root=root,
                      floating_only=floating_only)


def urdf_path(robot: str | Path) -> Path | None:
    """The URDF file behind ``robot`` (as :func:`load_robot` takes it): the one a bundled robot
    or a robot config names, or the ``.urdf`` path itself; None for URDF text or a config
    without one. Relative mesh paths in the URDF are relative to its folder."""
    text = str(robot)
    if text.lstrip().startswith("<") or (Path(text).suffix in (".yaml", ".yml") and not Path(text).is_file()):
        return None
    return next((p for p in robot_sources(text) if p.suffix in (".urdf", ".xml")), None)


def robot_sources(robot: str | Path) -> list[Path]:
    """The files :func:`load_robot` reads for ``robot`` (a robot config and its URDF, or a URDF),
    absolute; none for URDF text given inline or an unknown name."""
    text = str(robot)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        return list(_config_sources(str(path.absolute()), file_stamp(path)))
    if path.suffix in (".urdf", ".xml"):
        return [path.absolute()]
    config_path = robot_config_dir() / f"{text}.yaml"
    if text.lstrip().startswith("<") or len(text) > 200 or not config_path.is_file():
        return []
    return robot_sources(config_path)


@functools.lru_cache(maxsize=64)
def _config_sources(path: str, stamp: tuple | None) -> tuple[Path, ...]:
    config = load_robot_config(path)
    return (Path(path),) + ((Path(config.urdf).absolute(),) if config.urdf is not None else ())


def file_stamp(path: str | Path) -> tuple | None:
    """(modification time ns, size) of the file ``path`` names, None if it names none: a cache
    keyed by it reads a changed file again."""
    try:
        stat = Path(path).stat()
    except (OSError, ValueError):
        return None
    return (stat.st_mtime_ns, stat.st_size)


def shared_robot(robot: str | Path, *, base: str | None = None,
                 end_effectors: Sequence[str] | None = None) -> FreeFlyerModel:
    """:func:`load_robot` for reading only (checking options and specs against a robot): cached
    by the source and the stamps of every file it reads, so a changed file is read again and
    checking many specs or argument sets does not re-read the same URDF. Callers must not change
    the model; a run loads its own."""
    text = str(robot)
    ee = tuple(end_effectors) if end_effectors is not None else None
    if len(text) > 4096 or "\x00" in text:
        return load_robot(text, base=base, end_effectors=ee)  # refused there, with the message
    try:
        stamps = tuple((str(p), file_stamp(p)) for p in robot_sources(text))
    except (OSError, ValueError):
        return load_robot(text, base=base, end_effectors=ee)
    return _shared(text, base, ee, stamps)


@functools.lru_cache(maxsize=16)
def _shared(robot: str, base: str | None, ee: tuple[str, ...] | None, stamps: tuple) -> FreeFlyerModel:
    return load_robot(robot, base=base, end_effectors=ee)
