"""Layer 5: the ``freeflyer`` command line (no ROS)."""
