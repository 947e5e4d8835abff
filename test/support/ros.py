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

"""ROS helpers for tests with real rclpy: spin nodes in a thread, collect messages, a clock."""

import threading
import time
import uuid

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock


def publishers_on(node, topic):
    """Return ``node``'s publishers on ``topic`` (resolved as the node resolves it)."""
    name = node.resolve_topic_name(topic)
    return [p for p in node.publishers if p.topic_name == name]


def subscriptions_on(node, topic):
    """Return ``node``'s subscriptions on ``topic`` (resolved as the node resolves it)."""
    name = node.resolve_topic_name(topic)
    return [s for s in node.subscriptions if s.topic_name == name]


def unique_namespace(prefix='t'):
    """Return a namespace no other test uses, so tests never see each other's topics."""
    return f'/{prefix}_{uuid.uuid4().hex[:8]}'


class Harness:
    """Spins the nodes under test plus a client node on a background executor."""

    def __init__(self, namespace, *nodes):
        self.namespace = namespace
        self.client = Node('test_client', namespace=namespace)
        # Single-threaded: a callback hop costs well under a millisecond, where rclpy's
        # MultiThreadedExecutor took up to hundreds of ms here while the test thread polls.
        self.executor = SingleThreadedExecutor()
        self.nodes = list(nodes)
        for n in (self.client, *nodes):
            self.executor.add_node(n)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()
        self.received = {}

    def publisher(self, msg_type, topic, reliable=True):
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE if reliable
                         else ReliabilityPolicy.BEST_EFFORT)
        return self.client.create_publisher(msg_type, topic, qos)

    def collect(self, msg_type, topic, depth=50):
        """Subscribe and return the list the messages will be appended to."""
        box = self.received.setdefault(topic, [])
        self.client.create_subscription(msg_type, topic, box.append, depth)
        return box

    def wait_for(self, predicate, timeout=10.0, interval=0.01):
        """Poll ``predicate`` until it is true or ``timeout`` seconds pass; return its value."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = predicate()
            if value:
                return value
            time.sleep(interval)
        return predicate()

    def wait_periods(self, period, count, timeout=30.0):
        """
        Wait until a wall-clock timer of ``period`` s has fired ``count`` times; return whether.

        The timer is the client's, spun by the same executor as the nodes under test: a
        positive event that they were spun through ``count`` such periods, in which a timer of
        theirs with that period would have fired as often. A check that something does not
        happen on its own waits for this instead of sleeping.
        """
        ticks = []
        timer = self.client.create_timer(period, lambda: ticks.append(None))
        try:
            return self.wait_for(lambda: len(ticks) >= count, timeout)
        finally:
            timer.cancel()
            self.client.destroy_timer(timer)

    def wait_for_subscribers(self, pub, count=1, timeout=10.0):
        return self.wait_for(lambda: pub.get_subscription_count() >= count, timeout)

    def wait_for_match(self, pub, subscriptions, timeout=10.0):
        """
        Wait until ``pub`` and one of ``subscriptions`` (in-process) have matched each other.

        The writer side matches first; a sample written before the reader side has matched
        is dropped (best effort) or only recovered at the next heartbeat, about 3 s later
        (reliable). Tests that time a reaction wait for both sides.
        """
        return self.wait_for(lambda: pub.get_subscription_count() >= 1 and any(
            s.get_publisher_count() >= 1 for s in subscriptions), timeout)

    def close(self):
        self.executor.shutdown(timeout_sec=2.0)
        for n in self.nodes:
            n.destroy_node()
        self.client.destroy_node()


def sim_time_options(namespace):
    """
    Return the constructor options of a node on the test's clock: use_sim_time, own /clock.

    ``{'parameter_overrides': [use_sim_time true], 'cli_args': [remap /clock]}``: the node's
    /clock is remapped to ``<namespace>/clock``, which only :class:`SimClock` of the harness in
    that namespace publishes, so no other test (or test run in the same domain) moves it.
    """
    return {'parameter_overrides': [Parameter('use_sim_time', value=True)],
            'cli_args': ['--ros-args', '-r', f'/clock:={clock_topic(namespace)}']}


def clock_topic(namespace):
    return f'{namespace}/clock'


class SimClock:
    """
    The test's clock (rosgraph_msgs/Clock) for nodes made with :func:`sim_time_options`.

    Time stands still until the test moves it with :meth:`set_time` or :meth:`advance`, which
    return once every given node's clock reads the new time.
    """

    def __init__(self, harness, start_ns=100_000_000_000):
        self.harness = harness
        self.topic = clock_topic(harness.namespace)
        self.pub = harness.client.create_publisher(Clock, self.topic, 10)
        self.now_ns = int(start_ns)

    @property
    def now(self):
        """Return the time in seconds, as a node computes it from its clock."""
        return self.now_ns * 1e-9

    def stamp(self):
        """Return the time as a builtin_interfaces/Time (for headers)."""
        return Time(nanoseconds=self.now_ns).to_msg()

    def set_time(self, t_ns, *nodes, timeout=10.0):
        """
        Publish time ``t_ns`` until every node in ``nodes`` has it; return whether all do.

        A node's clock subscription is best effort (rclpy's choice): the message is sent again
        every 0.2 s until it has arrived, which also covers a subscription not matched yet.
        """
        self.now_ns = int(t_ns)
        msg = Clock(clock=self.stamp())
        end = time.monotonic() + timeout
        while True:
            self.pub.publish(msg)
            if self.harness.wait_for(lambda: all(
                    n.get_clock().now().nanoseconds == self.now_ns for n in nodes),
                    timeout=0.2, interval=0.001):
                return True
            if time.monotonic() > end:
                return False

    def advance(self, seconds, *nodes):
        """Move the time on by ``seconds`` (rounded to whole ns); see :meth:`set_time`."""
        return self.set_time(self.now_ns + int(round(seconds * 1e9)), *nodes)
