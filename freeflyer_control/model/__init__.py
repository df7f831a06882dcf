"""Layer 1: URDF + robot config -> a Pinocchio model with a floating base."""

from freeflyer_control.model.config import RobotConfig, load_robot_config, parse_robot_config
from freeflyer_control.model.loader import FreeFlyerModel, load_model, scaled_base
from freeflyer_control.model.robots import DEFAULT_ROBOT, load_robot, robot_names

__all__ = [
    "DEFAULT_ROBOT",
    "FreeFlyerModel",
    "RobotConfig",
    "load_model",
    "load_robot",
    "load_robot_config",
    "parse_robot_config",
    "robot_names",
    "scaled_base",
]
