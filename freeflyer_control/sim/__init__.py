"""Closed-loop simulation without ROS: plant and controllers in lockstep (``freeflyer sim``)."""
