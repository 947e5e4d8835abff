"""Message builders for the ground outputs: OccupancyGrid, PointCloud2 and LaserScan."""

import array

from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan, PointCloud2, PointField


def grid_to_msg(grid, spec, header_stamp, frame_id, out=None):
    """
    Fill a nav_msgs/OccupancyGrid from an int8 (ny, nx) grid laid out by a GridSpec.

    ``info.origin`` is the pose of cell (0, 0)'s outer corner in ``frame_id`` with no
    rotation; ``data`` is row-major (index = col + row * width), 0 free, 100 occupied,
    -1 unknown.
    """
    msg = OccupancyGrid() if out is None else out
    msg.header.stamp = header_stamp
    msg.header.frame_id = frame_id
    msg.info.map_load_time = header_stamp
    msg.info.resolution = float(spec.resolution)
    msg.info.width = int(spec.nx)
    msg.info.height = int(spec.ny)
    msg.info.origin.position.x = float(spec.origin[0])
    msg.info.origin.position.y = float(spec.origin[1])
    msg.info.origin.position.z = 0.0
    msg.info.origin.orientation.w = 1.0
    msg.data = array.array('b', grid.astype('int8', copy=False).tobytes())
    return msg


_XYZ_FIELDS = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
               for i, n in enumerate('xyz')]


def points_to_cloud(points, header_stamp, frame_id):
    """Build an unorganized sensor_msgs/PointCloud2 (x, y, z float32) from (N, 3) points."""
    msg = PointCloud2()
    msg.header.stamp = header_stamp
    msg.header.frame_id = frame_id
    msg.height = 1
    msg.width = int(len(points))
    msg.fields = list(_XYZ_FIELDS)
    msg.is_bigendian = False
    msg.point_step = 12
    msg.row_step = 12 * msg.width
    msg.is_dense = True
    msg.data = array.array('B', points.astype('<f4', copy=False).tobytes())
    return msg


def scan_to_msg(ranges, layout, header_stamp, frame_id):
    """
    Build a sensor_msgs/LaserScan from the ranges of a :class:`ground_scan.ScanLayout`.

    Angles as LaserScan: 0 = +x of ``frame_id``, counter-clockwise positive; no intensities,
    ``time_increment`` and ``scan_time`` 0 (every ray is from the same image).
    """
    msg = LaserScan()
    msg.header.stamp = header_stamp
    msg.header.frame_id = frame_id
    msg.angle_min = layout.angle_min
    msg.angle_max = layout.angle_max
    msg.angle_increment = layout.angle_increment
    msg.time_increment = 0.0
    msg.scan_time = 0.0
    msg.range_min = layout.range_min
    msg.range_max = layout.range_max
    msg.ranges = array.array('f', ranges.astype('float32', copy=False).tobytes())
    return msg
