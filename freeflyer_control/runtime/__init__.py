"""The logic of the ROS nodes, without ROS: each node is a thin shell around one server here.

Servers take plain data (numpy arrays, floats, times in seconds on the node's clock) and return
plain data; message conversion lives in :mod:`freeflyer_control.ros.conversions`.
"""
