"""Exceptions raised by freeflyer_control.

Every error message names the culprit (link, joint, frame, file or key) and says what to
change, so that a user can fix a model without reading our source.
"""


class FreeFlyerError(Exception):
    """Base class of the package's own errors."""


class ModelError(FreeFlyerError, ValueError):
    """A URDF or robot model is unusable as given (bad inertia, unknown frame, bad topology...)."""


class ConfigError(ModelError):
    """A robot config (YAML) is malformed or does not match its URDF."""


class ModeError(FreeFlyerError, ValueError):
    """A maneuvering mode is unknown, or the robot lacks the actuators it needs."""


def interrupted_by_user(exc: BaseException) -> bool:
    """True when ``exc`` is Ctrl-C: a KeyboardInterrupt, or one that arrived while a compiled
    (numba) kernel was being called, which CPython reports as a SystemError ("returned a result
    with an exception set") caused by it. Whatever catches errors to carry on (a law's guard)
    must let these through: the user asked the run to stop."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        if not isinstance(exc, SystemError):
            return False
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
