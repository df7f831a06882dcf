"""freeflyer_control: modelling and control of free-flying space robots.

Layers (dependencies point downwards only):

* ``freeflyer_control.model``    URDF + robot config -> Pinocchio model with a floating base
* ``freeflyer_control.physics``  momentum, maneuvering modes, GJM, reduced dynamics, plant
* ``freeflyer_control.cli``      the ``freeflyer`` command (no ROS)

Nothing below the ROS node layer imports rclpy.
"""

__version__ = "0.1.0"
