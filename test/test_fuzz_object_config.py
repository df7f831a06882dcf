"""Fuzz: the object config reader (``parse_yaml`` + ``parse_object``) on spoiled bundled objects.

Every bundled object, spoiled as people and tools spoil YAML (fuzz_support.spoil, yaml_text):
numbers made absurd, non-finite, booleans or text, keys deleted, misspelt or added, lines
repeated, text cut short. Claims, for every input: the reader returns an object or refuses with
a ConfigError in one line (no other exception); an accepted object is physical: mass and radii
of gyration inside their ranges, inertia symmetric positive definite, sizes and grasp frames
finite. And both outcomes are common, or the fuzz proves nothing.
"""

from __future__ import annotations

import numpy as np
import yaml
from fuzz_support import fuzz_reader, fuzz_rng

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.yaml_files import parse_yaml
from freeflyer_control.model.config import MAX_EXTENT
from freeflyer_control.model.objects import (
    MAX_GYRATION,
    MAX_OBJECT_MASS,
    MIN_GYRATION,
    MIN_OBJECT_MASS,
    object_config_dir,
    parse_object,
)

GOOD = [yaml.safe_load(p.read_text()) for p in sorted(object_config_dir().glob("*.yaml"))]


def assert_physical(obj) -> None:
    assert MIN_OBJECT_MASS <= obj.mass <= MAX_OBJECT_MASS
    assert np.all(np.isfinite(obj.inertia)) and np.allclose(obj.inertia, obj.inertia.T)
    moments = np.linalg.eigvalsh(obj.inertia)
    assert moments[0] > 0
    radii = np.sqrt(moments / obj.mass)
    assert MIN_GYRATION <= radii.min() and radii.max() <= MAX_GYRATION
    assert np.all(np.isfinite(obj.size)) and np.all((obj.size > 0) & (obj.size <= MAX_EXTENT))
    for grasp in obj.grasps:
        assert np.all(np.isfinite(grasp.placement.homogeneous))
        assert np.all(np.abs(grasp.placement.translation) <= MAX_EXTENT)
    assert len({g.end_effector for g in obj.grasps}) == len(obj.grasps)


def test_fuzz_object_config_reader_accepts_physical_objects_or_refuses_in_one_line():
    fuzz_reader(fuzz_rng(salt=30), GOOD,
                lambda text: parse_object(parse_yaml(text, "fuzz.yaml", "object config"), "fuzz.yaml"),
                lambda obj, _: assert_physical(obj), refused=ConfigError)
