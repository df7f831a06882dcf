"""What every fuzz test shares: how many inputs, the fixed seed, and adversarial numbers.

Each entry point (message readers, controller tick, plant step, bridge callbacks, CLI parsing)
gets its own fuzz module, ``test/test_fuzz_<entry point>.py``. Every one of them draws
:func:`fuzz_count` inputs from a generator seeded with :data:`FUZZ_SEED` and checks the same
three claims: no exception escapes, no output is non-finite, and every output is zero whenever
the status is not ``ok``.

``FREEFLYER_FUZZ_N`` sets the count per entry point (default 10 000, which keeps all fuzz
modules together under a minute on a 2-core machine); ``FREEFLYER_FUZZ_N=200000 pytest -q -k
fuzz`` is the long run.
"""

from __future__ import annotations

import os

import numpy as np

FUZZ_SEED = 20261124
DEFAULT_FUZZ_N = 10_000

# Finite values that pass a plain isfinite() check but are physically absurd, the values
# that hide inside a well-formed message, and the non-finite ones a reader must refuse.
ABSURD_FINITE = (1e154, -1e154, 1e308, -1e308, 1e30, -1e30, 1e10, -1e10,
                 np.finfo(float).tiny, -np.finfo(float).tiny, 5e-324)
NON_FINITE = (float("nan"), float("inf"), float("-inf"))


def fuzz_count() -> int:
    """Inputs per entry point: ``FREEFLYER_FUZZ_N`` or 10 000."""
    raw = os.environ.get("FREEFLYER_FUZZ_N", "")
    if not raw:
        return DEFAULT_FUZZ_N
    try:
        count = int(raw)
    except ValueError:
        raise ValueError(f"FREEFLYER_FUZZ_N must be a whole number, got {raw!r}") from None
    if count < 1:
        raise ValueError(f"FREEFLYER_FUZZ_N must be >= 1, got {count}")
    return count


def fuzz_rng(salt: int = 0) -> np.random.Generator:
    """The fixed-seed generator of one fuzz module (``salt`` keeps modules independent)."""
    return np.random.default_rng([FUZZ_SEED, salt])


def adversarial_float(rng: np.random.Generator, typical: float = 1.0) -> float:
    """One number: usually plausible (``typical`` sets its scale), often absurd or non-finite."""
    pick = rng.random()
    if pick < 0.55:
        return float(rng.normal(0.0, typical))
    if pick < 0.8:
        return float(rng.choice(ABSURD_FINITE))
    if pick < 0.9:
        return float(rng.choice(NON_FINITE))
    return float(10.0 ** rng.uniform(-320, 308) * rng.choice((-1.0, 1.0)))


def adversarial_vector(rng: np.random.Generator, size: int, typical: float = 1.0) -> np.ndarray:
    """A vector that is plausible as a whole, or has one or more adversarial entries."""
    values = rng.normal(0.0, typical, size)
    if size and rng.random() < 0.7:
        for index in rng.choice(size, size=rng.integers(1, size + 1), replace=False):
            values[index] = adversarial_float(rng, typical)
    return values


# --- configs: YAML mappings spoiled the ways people and tools spoil them ---------------------------

# Text YAML reads from what was meant as a number or a name (exponents without a dot or a sign,
# words, an empty value, a very long name), and YAML's own non-finite numbers.
TEXT_VALUES = ("1e-3", "1.0e3", "2E6", "abc", "", " ", "yes", "null", "x" * 5000, "-1e400", "nan", ".inf",
               "0x10", "1_000", "é", "\x00", "[1, 2", "{a: 1}")


def adversarial_value(rng: np.random.Generator, like=None):
    """A value to put where ``like`` was: usually a spoiled number, otherwise a boolean, a text,
    nothing, a list, a mapping, a huge integer."""
    pick = rng.random()
    if pick < 0.45:
        x = adversarial_float(rng, abs(like) if isinstance(like, (int, float)) and not isinstance(like, bool)
                              and like else 1.0)
        return float(x)
    if pick < 0.55:
        return bool(rng.random() < 0.5)
    if pick < 0.75:
        return str(rng.choice(TEXT_VALUES))
    if pick < 0.8:
        return None
    if pick < 0.87:
        return [adversarial_float(rng) for _ in range(int(rng.integers(0, 5)))]
    if pick < 0.92:
        return {"x": 1.0} if rng.random() < 0.5 else {}
    return int(rng.choice([0, -1, 1, 10**30, -(10**30), 2**63]))


def _places(data, path=()):
    """(container, key, path) of every value in a nested mapping/list."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    out = []
    for key, value in items:
        out.append((data, key, path + (key,)))
        out += _places(value, path + (key,))
    return out


def typo(rng: np.random.Generator, key: str) -> str:
    """``key`` misspelt: a letter dropped, doubled or swapped, or a plural's s added or dropped."""
    key = str(key)
    if len(key) < 2:
        return key + "x"
    i = int(rng.integers(len(key) - 1))
    pick = rng.random()
    if pick < 0.3:
        return key[:i] + key[i + 1:]
    if pick < 0.5:
        return key[:i] + key[i] + key[i:]
    if pick < 0.8:
        return key[:i] + key[i + 1] + key[i] + key[i + 2:]
    return key[:-1] if key.endswith("s") else key + "s"


def spoil(rng: np.random.Generator, data: dict, mutations: int | None = None) -> dict:
    """A deep copy of ``data`` with 0 to 3 spoils: a value replaced (by :func:`adversarial_value`,
    or a number scaled by up to 1e300 or negated), a key deleted, misspelt or added."""
    import copy

    data = copy.deepcopy(data)
    for _ in range(int(rng.integers(0, 4)) if mutations is None else mutations):
        places = _places(data)
        if not places:
            break
        container, key, _ = places[int(rng.integers(len(places)))]
        value = container[key]
        pick = rng.random()
        if pick < 0.35:
            container[key] = adversarial_value(rng, value)
        elif pick < 0.55 and isinstance(value, (int, float)) and not isinstance(value, bool):
            container[key] = float(value) * float(rng.choice([-1.0, 10.0 ** rng.integers(-300, 301), 1e6, 0.0]))
        elif pick < 0.7 and isinstance(container, dict):
            del container[key]
        elif pick < 0.85 and isinstance(container, dict):
            container[typo(rng, key)] = container.pop(key)
        elif isinstance(container, dict):
            container[typo(rng, key) + "_extra"] = adversarial_value(rng)
        else:
            container[key] = adversarial_value(rng, value)
    return data


def yaml_text(rng: np.random.Generator, data) -> str:
    """``data`` as YAML text, sometimes spoiled as text: a line repeated (a key twice), the text
    cut short, a character inserted, tabs for indentation."""
    import yaml

    text = yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=True)
    pick = rng.random()
    lines = text.splitlines(keepends=True)
    if pick < 0.06 and lines:
        i = int(rng.integers(len(lines)))
        lines.insert(i, lines[i])
        text = "".join(lines)
    elif pick < 0.1:
        text = text[: int(rng.integers(len(text) + 1))]
    elif pick < 0.14 and text:
        i = int(rng.integers(len(text)))
        text = text[:i] + str(rng.choice([":", "[", "{", "\t", "&a ", "*a", "'", '"', "\x07", "#"])) + text[i:]
    return text


def one_line(message: str) -> None:
    """The claim every refusal meets: one non-empty line, bounded, no traceback."""
    assert message.strip(), "an empty refusal"
    assert "\n" not in message, message
    assert len(message) < 3000, len(message)
    assert "Traceback" not in message


def fuzz_reader(rng: np.random.Generator, good: list, read, check, refused=(ValueError,)) -> dict[str, int]:
    """The loop every config-reader fuzz runs: :func:`fuzz_count` inputs, each one of ``good``
    spoiled (:func:`spoil`, :func:`yaml_text`) and given to ``read(text)``; a refusal (one of
    ``refused``) must be :func:`one_line`, an accepted result must pass ``check``. Both outcomes
    must be common (over 10 % each), or the fuzz proves nothing. Returns the counts."""
    outcomes = {"accepted": 0, "refused": 0}
    for _ in range(fuzz_count()):
        text = yaml_text(rng, spoil(rng, good[int(rng.integers(len(good)))]))
        try:
            result = read(text)
        except refused as exc:
            one_line(str(exc))
            outcomes["refused"] += 1
            continue
        outcomes["accepted"] += 1
        check(result, outcomes["accepted"])
    n = sum(outcomes.values())
    assert outcomes["accepted"] > 0.1 * n and outcomes["refused"] > 0.1 * n, outcomes
    return outcomes
