"""The driver's decisions from a ground grid, free of ROS."""
