# Copyright 2026 freespace_seg maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Small rclpy helpers shared by the nodes: parameters from specs, QoS by name, clean spin."""

import functools
import signal
import threading

from freespace_seg.nodes.params import validate
from freespace_seg.nodes.stderr_capture import enable_faulthandler
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
import rclpy
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import (DurabilityPolicy, qos_profile_sensor_data, qos_profile_system_default,
                       QoSProfile, ReliabilityPolicy)


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


def ends_in(success, failure):
    """
    Mark a transition callback with the primary state it ends in, on SUCCESS or otherwise.

    rclpy keeps the lifecycle state private (``_state_machine``): the node keeps its own
    label (``self._lifecycle_label``) from what its callbacks return, by rcl's default state
    machine (a shutdown ends in finalized either way; a callback that raises or returns ERROR
    goes through the node's ``on_error``, which sets the label last; see
    :class:`~freespace_seg.nodes.segmentation_node.SegmentationNode`).
    """
    # Imported here: the driver, which has no lifecycle, imports this module too, and
    # rclpy.lifecycle needs rclpy.event_handler, which Humble does not have.
    from rclpy.lifecycle import TransitionCallbackReturn

    def mark(callback):
        @functools.wraps(callback)
        def transition(self, state):
            result = callback(self, state)
            self._lifecycle_label = (success if result == TransitionCallbackReturn.SUCCESS
                                     else failure)
            return result
        return transition
    return mark


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


def _as_declared(spec, value):
    """Return a parameter value as the node keeps it: arrays as lists, a double's int as float."""
    if spec.kind in ('int_array', 'double_array') and value is not None:
        return list(value)
    if spec.kind == 'double' and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def checked_changes(specs, params):
    """
    Validate ``params`` (rclpy Parameters) against ``specs``; return ``(changes, reason)``.

    ``specs`` maps names to :class:`ParamSpec` (or is a list of them); names without a spec
    are left out. ``changes`` maps the others to their values as the node keeps them; when a
    value is invalid, ``changes`` is None and ``reason`` says why the first one is refused.
    """
    if not isinstance(specs, dict):
        specs = {s.name: s for s in specs}
    changes = {}
    for p in params:
        spec = specs.get(p.name)
        if spec is None:
            continue
        value = _as_declared(spec, p.value)
        err = validate(spec, value)
        if err:
            return None, err
        changes[p.name] = value
    return changes, None


def refused_change(specs, params):
    """Return why the first invalid value in ``params`` is refused, or None."""
    return checked_changes(specs, params)[1]


def on_parameter_changes(node, specs, apply):
    """
    Validate, then apply: the set-parameters callback of a node whose parameters change live.

    Every value is checked against ``specs`` first and nothing is applied unless all of them
    are valid; then ``apply(changes)`` (name -> value, as :func:`checked_changes` returns
    them) applies them and returns None, or returns why it refuses them (values that are
    valid one by one but not together, a model that does not load...). rclpy runs
    set-parameters callbacks newest first, so this one runs before
    :func:`declare_and_validate`'s own check.
    """
    def on_set(params):
        changes, reason = checked_changes(specs, params)
        if reason is None and changes:
            reason = apply(changes)
        return SetParametersResult(successful=reason is None, reason=reason or '')

    node.add_on_set_parameters_callback(on_set)


def _first_line(exc):
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


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
        try:
            value = node.declare_parameter(spec.name, spec.default, descriptor_for(spec)).value
        except InvalidParameterTypeException as e:
            # e.g. overlay_alpha:=abc, or :=1 for a double (ROS wants 1.0).
            hint = ' (write a double with a decimal point, e.g. 1.0)' \
                if spec.kind == 'double' else ''
            errors.append(f'{spec.name}: wrong type: {_first_line(e)}{hint}')
            continue
        except ParameterException as e:  # out of the descriptor's range, read-only...
            errors.append(f'{spec.name}: {_first_line(e)}')
            continue
        value = _as_declared(spec, value)
        err = validate(spec, value)
        if err:
            errors.append(err)
        values[spec.name] = value
    if errors:
        raise StartupError('invalid parameters: ' + '; '.join(errors))

    def on_set(params):
        reason = refused_change(by_name, params)
        return SetParametersResult(successful=reason is None, reason=reason or '')

    node.add_on_set_parameters_callback(on_set)
    return values


#: latched: reliable, transient_local, the newest message only; a late subscriber gets it at
#: once (the grid, the collision count, a latched e_stop)
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


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

    The subscription callback puts; worker threads take, each item by one of them (a worker
    that becomes free gets the newest). Latency never grows with load: frames that arrive
    while every worker is busy replace each other and are counted as drops.
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

    @property
    def waiting(self):
        """Return whether an item waits to be taken."""
        return self._item is not None

    def close(self):
        with self._cond:
            self._closed = True
            self._item = None
            self._cond.notify_all()


class InOrderGate:
    """
    Lets the outputs of frames processed at once out in the order the frames arrived.

    Each frame has a sequence number, increasing in arrival order. :meth:`publish` calls a
    frame's publish function, under a lock so that two frames' outputs never interleave,
    unless a frame that arrived later has already been let out: then the frame is late, its
    outputs are dropped (not published) and counted in :attr:`late`. So what leaves is
    always in arrival order, and never waits for a slower frame.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._last = None
        #: frames dropped because a later frame's outputs had already left
        self.late = 0

    def publish(self, seq, publish):
        """Let frame ``seq`` out, calling ``publish``, unless it is late; return whether it was."""
        with self._lock:
            if self._last is not None and seq <= self._last:
                self.late += 1
                return False
            self._last = seq
            publish()
            return True


#: Signals taken by the handler of :func:`stop_signals_via_keyboard_interrupt`.
_SIGNALLED = []


def stop_signals_via_keyboard_interrupt():
    """
    Make SIGINT and SIGTERM raise KeyboardInterrupt in the main thread instead of rclpy's.

    rclpy's own handlers shut the context down from inside the signal, concurrently with
    whatever the main thread and the node's threads are doing: nothing can be published
    afterwards (a driver's final zero command would be lost), and destroying the node races
    with the shutdown. With this, the executor stops, :func:`spin_node` destroys the node while
    the context still works, then shuts rclpy down, all in the main thread and in that order.
    A second signal during that cleanup is ignored. The signal is also recorded, so that
    :func:`spin_node` recognizes it when rclpy's C++ code turns the KeyboardInterrupt into
    another exception. Only :func:`spin_node` (the nodes'
    ``main``) calls this: it changes process-wide signal handling.
    """
    from rclpy.signals import uninstall_signal_handlers
    uninstall_signal_handlers()

    def on_signal(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _SIGNALLED.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def stop_spin_thread(executor, thread, timeout_sec=2.0, join_timeout=5.0):
    """
    Shut down ``executor`` and wait for ``thread`` (spinning it) to leave it.

    Call this before destroying the executor's nodes: a node destroyed under a thread still
    inside ``wait_for_ready_callbacks`` left that thread spinning on the GIL, starving the
    main thread (a benchmark hung that way).
    """
    executor.shutdown(timeout_sec=timeout_sec)
    thread.join(timeout=join_timeout)


#: How long one executor wait may block: a signal is acted on within this time even when no
#: timer or message wakes the executor (Python runs signal handlers between waits).
SIGNAL_POLL_S = 0.2


def spin_node(node_factory, args=None):
    """
    Initialise rclpy, build the node, spin until SIGINT/SIGTERM, clean up; return an exit code.

    A :class:`StartupError` is logged as fatal and gives exit code 2. SIGINT and SIGTERM
    give 0; they are handled in the main thread (see
    :func:`stop_signals_via_keyboard_interrupt`), so the node is destroyed before rclpy shuts
    down. A native crash prints every thread's Python stack (faulthandler) to stderr, also
    while a decoder's stderr is being captured (see :func:`enable_faulthandler`).
    Written with try/finally so it also runs on Humble and Jazzy.
    """
    enable_faulthandler()
    rclpy.init(args=args)
    # Before the node: a signal during startup (loading a model) ends the process cleanly.
    stop_signals_via_keyboard_interrupt()
    executor = SingleThreadedExecutor()
    node = None
    code = 0
    try:
        node = node_factory()
        executor.add_node(node)
        while rclpy.ok():
            executor.spin_once(timeout_sec=SIGNAL_POLL_S)
    except StartupError as e:
        rclpy.logging.get_logger('freespace_seg').fatal(str(e))
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # A signal handled while rclpy's C++ code was converting a message (take_message)
        # reaches us as pybind11's "Unable to convert call argument" RuntimeError instead of
        # the KeyboardInterrupt: still a clean stop. Without a signal it is a real error.
        if not _SIGNALLED:
            raise
    finally:
        # A signal from here on is ignored (the handler disarms itself on the first one;
        # disarm here too for a cleanup that runs without one).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code
