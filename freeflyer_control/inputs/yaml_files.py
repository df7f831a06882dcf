"""Reading a config file's YAML: one loader for every config of the package.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word (``runs: 10`` then
``runs: 1000`` three screens further down), and a file that is not text gives a decoding
traceback that names no file. :func:`load_yaml_file` refuses both, and every YAML error, in one
line naming the file, the line and what to change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from freeflyer_control.errors import ConfigError

from .values import shown

# Configs are a few kB; a file this large is not one (and would be read whole into memory).
MAX_YAML_BYTES = 10 * 2**20
# Aliases (*name) let a few lines of YAML describe a structure of billions of items ("billion
# laughs"), which a reader walking it (a spec's digest) would never finish; a config needs a
# handful of aliases and a few thousand values.
MAX_ALIASES = 200
MAX_VALUES = 100_000


# libyaml's parser when PyYAML has it (ten times faster: configs are read on every run and in
# the fuzz tests by the thousand); the constructor, where repeated keys are caught, is Python.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):
    """SafeLoader refusing repeated keys in a mapping."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *defaults": overriding is its purpose
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: SafeLoader refuses it below, with its mark
                    continue
                if repeated:
                    raise DuplicateKey(key, seen[key], key_node.start_mark.line + 1)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


class DuplicateKey(yaml.YAMLError):
    def __init__(self, key: Any, first: int, again: int):
        super().__init__(f"key {shown(key)} is given twice (lines {first} and {again}); YAML would keep "
                         "the second without a word: keep one")
        self.line = again


def _count_aliases(text: str) -> None:
    """Refuse more than MAX_ALIASES aliases (a parse of the events only, in libyaml)."""
    if "*" not in text:  # an alias is written *name
        return
    count = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            count += 1
            if count > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases (*name) at line {event.start_mark.line + 1}; "
                                     "write the values out")


def _values(data: Any, memo: dict[int, int]) -> int:
    """How many values ``data`` holds once its shared parts (aliases) are written out, counted up
    to a little past MAX_VALUES."""
    if not isinstance(data, (dict, list)):
        return 1
    if id(data) in memo:
        return memo[id(data)]
    items = list(data.items()) if isinstance(data, dict) else [(None, v) for v in data]
    total = 1
    for _, value in items:
        total += _values(value, memo)
        if total > MAX_VALUES:
            break
    memo[id(data)] = total
    return total


def parse_yaml(text: str, source: str, what: str) -> Any:
    """The YAML document ``text`` (from ``source``, a file name for messages)."""
    try:
        _count_aliases(text)
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
        if "*" in text and _values(data, {}) > MAX_VALUES:
            raise yaml.YAMLError(f"its aliases (*name) make more than {MAX_VALUES} values; write the values out")
        return data
    except DuplicateKey as exc:
        raise ConfigError(f"{what} '{source}', line {exc.line}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "").split())
        raise ConfigError(f"{what} '{source}' is not valid YAML{where}: {problem}; check the indentation, "
                          "colons and quotes") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} '{source}' is not valid YAML: {' '.join(str(exc).split())}") from None


def load_yaml_file(path: str | Path, what: str) -> Any:
    """The YAML document in file ``path``; ``what`` names it in messages ("campaign spec").

    Raises:
        ConfigError: unreadable, not a text file, too large, invalid YAML, or a key given twice.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise ConfigError(f"{what} '{path}' is {size / 2**20:.0f} MB; a {what} is a few kB: "
                              "is this the right file?")
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
        if "\x00" in text:
            raise UnicodeDecodeError("utf-8", data, text.index("\x00"), text.index("\x00") + 1, "NUL byte")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} '{path}' is not a text file (byte 0x{data[exc.start]:02x} at offset "
                          f"{exc.start}); give the YAML file") from None
    return parse_yaml(text, str(path), what)
