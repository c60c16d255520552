"""The rclpy side of the ROS-arguments oracle (tests/ros_args_oracle.rs).

For each argument vector in the JSON file argv[1], in order from index argv[2] (0 if not
given): rclpy.init with the vector as a program's arguments in a context of its own, a node
'probe' with the probe's parameters and endpoints (the same as the Rust side's), one JSON line
on stdout ({"i", "fqn"} or {"i", "error"}), then it spins until a line on stdin says the test
has read the graph, tears everything down and says so ({"i", "gone"}); the next vector starts
at the next line on stdin. SIGUSR1 dumps every thread's stack to stderr (the test asks when
a teardown does not end).
"""

import faulthandler
import gc
import json
import signal
import sys
import threading

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String
from std_srvs.srv import Trigger
from test_msgs.action import Fibonacci

PARAMS = [
    ("rate", 10),
    ("gain", 0.5),
    ("name", "x"),
    ("flags", [True]),
    ("ids", [1]),
    ("scales", [1.0]),
    ("labels", ["a"]),
    ("nested.value", 0),
]


def probe(ctx):
    node = rclpy.create_node("probe", context=ctx)
    for name, default in PARAMS:
        node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True))
    keep = [
        node.create_publisher(String, "chatter", 10),
        node.create_publisher(String, "~/state", 10),
        node.create_publisher(String, "{node}/status", 10),
        node.create_subscription(String, "image", lambda m: None, 10),
        node.create_subscription(String, "/abs/topic", lambda m: None, 10),
        node.create_service(Trigger, "reset", lambda req, res: res),
        node.create_service(Trigger, "~/private_srv", lambda req, res: res),
        node.create_publisher(String, "reset", 10),
        ActionServer(node, Fibonacci, "fib", lambda goal: Fibonacci.Result()),
    ]
    return node, keep


def main():
    faulthandler.dump_traceback_later(900, exit=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    with open(sys.argv[1]) as f:
        vectors = json.load(f)
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    for i, vector in enumerate(vectors):
        if i < first:
            continue
        sys.stdin.readline()  # "go": the domain is empty again
        ctx = Context()
        try:
            rclpy.init(args=["probe_prog"] + vector, context=ctx)
            node, keep = probe(ctx)
        except Exception as e:  # what rcl refuses: the test expects rclev to refuse it too
            print(json.dumps({"i": i, "error": f"{type(e).__name__}: {e}"}), flush=True)
            ctx.try_shutdown()
            ctx.destroy()
            sys.stdin.readline()
            print(json.dumps({"i": i, "gone": True}), flush=True)
            continue
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        print(json.dumps({"i": i, "fqn": node.get_fully_qualified_name()}), flush=True)
        sys.stdin.readline()
        # Everything goes before the next vector: the action server explicitly (destroy_node
        # leaves it, and it keeps the node and its endpoints alive), the executor (its guard
        # conditions keep the context, hence the participant, in use), then node and context.
        executor.shutdown()
        spinner.join()
        executor.remove_node(node)
        for entity in keep:
            if isinstance(entity, ActionServer):
                entity.destroy()
        del keep, executor
        gc.collect()
        node.destroy_node()
        ctx.try_shutdown()
        ctx.destroy()  # the participant goes now, not when the context is collected
        print(json.dumps({"i": i, "gone": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
