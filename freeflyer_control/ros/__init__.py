"""Layer 4: the ROS 2 face. Only the node modules import rclpy; conversions.py does not."""
