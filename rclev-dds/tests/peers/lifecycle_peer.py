"""rclpy (ROS 2 Jazzy) lifecycle peers for rclev's lifecycle tests.

    lifecycle_peer.py client TARGET     drives TARGET's (`/ns/name`) lifecycle services through
                                        every transition and prints what it saw
    lifecycle_peer.py node NAME SECS    an rclpy.lifecycle.LifecycleNode NAME that stays up SECS
                                        seconds or until Ctrl-C

The node's on_activate raises the first time it is called (an error: errorprocessing, where
the default on_error recovers to unconfigured); the tests give rclev's node the same behaviour,
so that the client's transcript of the two can be compared line by line. Every wait is bounded.
"""

import faulthandler
import sys
import time

import rclpy
from lifecycle_msgs.msg import State, Transition, TransitionEvent
from lifecycle_msgs.srv import ChangeState, GetAvailableStates, GetAvailableTransitions, GetState
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from std_msgs.msg import String

LIMIT = 20.0

# (id, label) as sent in ChangeState requests: by label with id 0 (`ros2 service call`), by id,
# by both (`ros2 lifecycle set`), and refusals by label (an unknown label and one not available
# from the current state). Jazzy's rclpy raises on an unavailable *id*, inside its service
# callback, so refusals by id are tested against rclev only (lifecycle_interop.rs).
STEPS = [
    (0, "configure"),
    (3, ""),            # activate: on_activate raises the first time -> errorprocessing -> unconfigured
    (0, "activate"),    # refused: not available from unconfigured
    (1, "configure"),
    (3, "activate"),
    (0, "configure"),   # refused: not available from active
    (4, ""),            # deactivate
    (0, "cleanup"),
    (0, "configure"),
    (0, "activate"),
    (0, "launch"),      # refused: no such transition
    (0, "shutdown"),    # 7, from active
]


def spin_until(node, done, limit=LIMIT):
    deadline = time.monotonic() + limit
    while not done() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    return done()


def call(node, client, request, attempts=1, each=LIMIT):
    """The response, or None after `attempts` calls of `each` seconds went unanswered."""
    for _ in range(attempts):
        future = client.call_async(request)
        if spin_until(node, future.done, each):
            return future.result()
    return None


def state_text(s):
    return f"{s.id} {s.label}"


def client(node, target):
    # The event subscription first, the clients after it, then one answered call per service:
    # a server that answered has discovered this participant's readers up to the client's reply
    # reader, so the node's event writer has matched the (earlier) event reader by then.
    events = []
    node.create_subscription(TransitionEvent, f"{target}/transition_event", events.append, 10)
    get_state = node.create_client(GetState, f"{target}/get_state")
    states = node.create_client(GetAvailableStates, f"{target}/get_available_states")
    available = node.create_client(GetAvailableTransitions, f"{target}/get_available_transitions")
    graph = node.create_client(GetAvailableTransitions, f"{target}/get_transition_graph")
    change = node.create_client(ChangeState, f"{target}/change_state")
    for c in (get_state, states, available, graph, change):
        if not c.wait_for_service(timeout_sec=LIMIT):
            print(f"client: no service {c.srv_name}")
            return 1
    # The first call to a server just discovered may lose its reply: warm up each service with
    # calls that change nothing (a change to an unknown label is refused), retried.
    warm = [
        (get_state, GetState.Request()),
        (states, GetAvailableStates.Request()),
        (available, GetAvailableTransitions.Request()),
        (graph, GetAvailableTransitions.Request()),
        (change, ChangeState.Request(transition=Transition(id=0, label="warm_up"))),
    ]
    for c, request in warm:
        if call(node, c, request, attempts=4, each=5.0) is None:
            print(f"client: no answer from {c.srv_name}")
            return 1

    def show_state():
        r = call(node, get_state, GetState.Request())
        print(f"state: {state_text(r.current_state)}")
        r = call(node, available, GetAvailableTransitions.Request())
        print("available: " + ", ".join(
            f"{d.transition.id} {d.transition.label} ({d.start_state.label} -> {d.goal_state.label})"
            for d in r.available_transitions))

    r = call(node, states, GetAvailableStates.Request())
    print(f"states: {len(r.available_states)}: " + ", ".join(state_text(s) for s in r.available_states))
    r = call(node, graph, GetAvailableTransitions.Request())
    print(f"graph: {len(r.available_transitions)}")
    for d in r.available_transitions:
        print(f"graph: {d.transition.id} {d.transition.label}: "
              f"{state_text(d.start_state)} -> {state_text(d.goal_state)}")
    show_state()
    for id_, label in STEPS:
        r = call(node, change, ChangeState.Request(transition=Transition(id=id_, label=label)))
        if r is None:
            print(f"change {id_} {label!r}: no answer")
            return 1
        print(f"change {id_} {label!r}: success={r.success}")
        show_state()
    # The last step's last event: finalized. Events of one writer arrive in order.
    spin_until(node, lambda: any(e.goal_state.id == State.PRIMARY_STATE_FINALIZED for e in events))
    for e in events:
        print(f"event: {state_text(e.start_state)} -> {state_text(e.goal_state)} "
              f"timestamp={e.timestamp} transition={e.transition.id} {e.transition.label!r}")
    print(f"client: {len(events)} events")
    return 0


class Managed(LifecycleNode):
    """A managed talker like ROS 2's lifecycle demo (`lc_talker`), whose on_activate raises the
    first time."""

    def __init__(self, name):
        super().__init__(name)
        self.activations = 0
        self.count = 0
        self.publisher = self.create_lifecycle_publisher(String, "lifecycle_chatter", 10)
        self.create_timer(0.1, self.tick)

    def tick(self):
        self.count += 1
        self.publisher.publish(String(data=f"Lifecycle HelloWorld #{self.count}"))

    def report(self, what, state):
        print(f"node: {what} from {state.label}", flush=True)

    def on_configure(self, state):
        self.report("on_configure", state)
        return super().on_configure(state)

    def on_activate(self, state):
        self.report("on_activate", state)
        self.activations += 1
        if self.activations == 1:
            raise RuntimeError("first activation fails")
        return super().on_activate(state)

    def on_deactivate(self, state):
        self.report("on_deactivate", state)
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self.report("on_cleanup", state)
        return super().on_cleanup(state)

    def on_shutdown(self, state):
        self.report("on_shutdown", state)
        return super().on_shutdown(state)

    def on_error(self, state):
        self.report("on_error", state)
        return super().on_error(state)


def node_mode(name, secs):
    node = Managed(name)
    print("node: up", flush=True)
    deadline = time.monotonic() + float(secs)
    try:
        while time.monotonic() < deadline and rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # Ctrl-C shut the context down during a spin (see rclpy_peer.py).
        if rclpy.ok():
            raise
    print(f"node: done in state {node._state_machine.current_state[1]}", flush=True)
    node.destroy_node()
    return 0


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    stays = float(args[1]) if mode == "node" else 0.0
    faulthandler.dump_traceback_later(4 * LIMIT + stays, exit=True)
    rclpy.init()
    try:
        if mode == "client":
            node = rclpy.create_node("rclpy_lifecycle_client")
            try:
                rc = client(node, *args)
            finally:
                node.destroy_node()
        else:
            rc = node_mode(*args)
    finally:
        rclpy.try_shutdown()
    sys.exit(rc)


if __name__ == "__main__":
    main()
