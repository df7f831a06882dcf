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
