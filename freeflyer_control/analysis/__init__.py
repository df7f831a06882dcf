"""Layer 3: analysis (no ROS): dynamic singularities, workspaces, nonholonomic planning."""
