"""Small rclpy helpers shared by the nodes: parameters from specs, QoS by name, clean spin."""

import threading

from freespace_seg.params import validate
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data, qos_profile_system_default, QoSProfile


_TYPES = {
    'string': ParameterType.PARAMETER_STRING,
    'int': ParameterType.PARAMETER_INTEGER,
    'double': ParameterType.PARAMETER_DOUBLE,
    'bool': ParameterType.PARAMETER_BOOL,
    'int_array': ParameterType.PARAMETER_INTEGER_ARRAY,
    'double_array': ParameterType.PARAMETER_DOUBLE_ARRAY,
}


class StartupError(RuntimeError):
    """The node cannot start (bad parameter, missing model...); the message says why."""


def descriptor_for(spec):
    """Build the rcl_interfaces ParameterDescriptor for a :class:`ParamSpec`."""
    d = ParameterDescriptor(name=spec.name, type=_TYPES[spec.kind], description=spec.description,
                            additional_constraints=spec.constraints_text(),
                            read_only=spec.read_only)
    if spec.kind == 'double' and spec.min_value is not None and spec.max_value is not None:
        d.floating_point_range = [FloatingPointRange(from_value=float(spec.min_value),
                                                     to_value=float(spec.max_value), step=0.0)]
    if spec.kind == 'int' and spec.min_value is not None and spec.max_value is not None:
        d.integer_range = [IntegerRange(from_value=int(spec.min_value),
                                        to_value=int(spec.max_value), step=1)]
    return d


def declare_and_validate(node, specs):
    """
    Declare every spec on ``node``, validate the values, return {name: value}.

    Raises :class:`StartupError` listing every invalid value. Also installs a
    set-parameters callback that rejects invalid runtime changes with the reason, leaving
    the old value in place.
    """
    values, errors = {}, []
    by_name = {s.name: s for s in specs}
    for spec in specs:
        value = node.declare_parameter(spec.name, spec.default, descriptor_for(spec)).value
        if spec.kind == 'double' and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if spec.kind in ('int_array', 'double_array'):
            value = list(value)
        err = validate(spec, value)
        if err:
            errors.append(err)
        values[spec.name] = value
    if errors:
        raise StartupError('invalid parameters: ' + '; '.join(errors))

    def on_set(params):
        for p in params:
            spec = by_name.get(p.name)
            if spec is None:
                continue
            value = p.value
            if spec.kind in ('int_array', 'double_array') and value is not None:
                value = list(value)
            err = validate(spec, value)
            if err:
                return SetParametersResult(successful=False, reason=err)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return values


def qos_from_name(name, depth):
    """Return the QoS profile named as in Isaac ROS (SENSOR_DATA, DEFAULT...) with ``depth``."""
    base = {'SENSOR_DATA': qos_profile_sensor_data,
            'SYSTEM_DEFAULT': qos_profile_system_default}.get(name)
    if base is None:
        return QoSProfile(depth=depth)
    return QoSProfile(history=base.history, depth=depth, reliability=base.reliability,
                      durability=base.durability)


class LatestSlot:
    """
    A one-item mailbox: ``put`` replaces what is waiting, ``take`` blocks for the newest.

    The subscription callback puts; a worker thread takes. Latency never grows with load:
    frames that arrive while the worker is busy replace each other and are counted as drops.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._item = None
        self._closed = False
        self.dropped = 0

    def put(self, item):
        with self._cond:
            if self._item is not None:
                self.dropped += 1
            self._item = item
            self._cond.notify()

    def take(self, timeout=None):
        """Return the newest item, or None on timeout or after :meth:`close`."""
        with self._cond:
            if self._item is None and not self._closed:
                self._cond.wait(timeout)
            item, self._item = self._item, None
            return None if self._closed else item

    @property
    def closed(self):
        return self._closed

    def close(self):
        with self._cond:
            self._closed = True
            self._item = None
            self._cond.notify_all()


def spin_node(node_factory, args=None):
    """
    Initialise rclpy, build the node, spin until SIGINT/SIGTERM, clean up; return an exit code.

    A :class:`StartupError` is logged as fatal and gives exit code 2. SIGINT and SIGTERM
    give 0. Written with try/finally so it also runs on Humble and Jazzy.
    """
    rclpy.init(args=args)
    # Made before the node so that a signal during startup finds it ready.
    executor = SingleThreadedExecutor()
    node = None
    code = 0
    try:
        node = node_factory()
        executor.add_node(node)
        executor.spin()
    except StartupError as e:
        if rclpy.ok():
            rclpy.logging.get_logger('freespace_seg').fatal(str(e))
            code = 2
        # else: SIGINT/SIGTERM interrupted the startup, a clean exit all the same.
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:  # noqa: B902
        if rclpy.ok():
            raise
        # SIGINT/SIGTERM arrived while the node was starting: a clean exit all the same.
    finally:
        executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code
