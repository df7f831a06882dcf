"""Layer 2: free-flyer physics (no ROS): state, momentum, modes, GJM, reduced dynamics, plant."""
