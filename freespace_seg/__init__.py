"""freespace_seg: free-floor segmentation and ground occupancy for ROS 2 robots."""

__version__ = '0.1.0'
