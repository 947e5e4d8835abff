"""Install rules for the freespace_seg ament_python package."""

from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'freespace_seg'


def _files(pattern):
    return [f for f in glob(pattern) if os.path.isfile(f)]


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    # The photo texture bank of the synthetic renderer (non-Python files).
    package_data={'freespace_seg.sim': ['textures/*.jpg', 'textures/*.md']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'launch'), _files('launch/*.launch.py')),
        (os.path.join('share', package_name, 'config'), _files('config/*')),
        (os.path.join('share', package_name, 'models'), _files('models/*')),
    ],
    install_requires=['setuptools'],
    extras_require={
        'test': ['pytest'],
    },
    zip_safe=True,
    maintainer='freespace_seg maintainers',
    maintainer_email='maintainers@freespace-seg.org',
    description='Free-floor segmentation and ground occupancy from one camera for ROS 2.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'segmentation_node = freespace_seg.nodes.segmentation_node:main',
            'synthetic_camera = freespace_seg.nodes.synthetic_camera:main',
            'freespace_driver = freespace_seg.nodes.freespace_driver:main',
            'sim_robot = freespace_seg.nodes.sim_robot:main',
        ],
    },
)
