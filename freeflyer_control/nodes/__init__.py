"""Layer 4: rclpy nodes, thin shells around freeflyer_control.runtime servers."""
