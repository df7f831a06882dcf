"""Layer 3: control (no ROS): controllers, base control, thruster allocation, maneuvers, mode switching."""
