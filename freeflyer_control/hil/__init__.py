"""Hardware in the loop: the testbed bridge, its emulator, and safety (no ROS imports)."""
