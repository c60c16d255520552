"""A real ROS 2 Jazzy node (rclpy on rmw_fastrtps_cpp) for rclev's DDS interop tests.

    rclpy_peer.py MODE ARGS...

Every mode prints what it saw, one line each, and exits 0 when it saw what it expected,
1 otherwise; every wait is bounded.
"""

import faulthandler
import sys
import time

import rclpy
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String
from builtin_interfaces.msg import Time
from test_msgs.action import Fibonacci
from test_msgs.msg import BasicTypes
from test_msgs.srv import BasicTypes as BasicTypesSrv

LIMIT = 20.0


def basic(i):
    return BasicTypes(
        bool_value=i % 2 == 0,
        byte_value=bytes([i % 256]),
        char_value=65 + i % 26,
        float32_value=0.5 * i,
        float64_value=-1.25 * i,
        int8_value=-i % 128,
        uint8_value=i % 256,
        int16_value=-300 * i,
        uint16_value=300 * i,
        int32_value=-70000 * i,
        uint32_value=70000 * i,
        int64_value=-(1 << 40) * i,
        uint64_value=(1 << 40) * i,
    )


def message(kind, i):
    return String(data=f"hello from rclpy {i}") if kind == "string" else basic(i)


def msg_type(kind):
    return String if kind == "string" else BasicTypes


def qos(spec):
    """depth[,tl][,be]"""
    parts = spec.split(",")
    q = QoSProfile(depth=int(parts[0]))
    if "tl" in parts:
        q.durability = DurabilityPolicy.TRANSIENT_LOCAL
    if "be" in parts:
        q.reliability = ReliabilityPolicy.BEST_EFFORT
    return q


def spin_until(node, done, limit=LIMIT):
    deadline = time.monotonic() + limit
    while not done() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    return done()


def talker(node, topic, kind, count, qos_spec="10", wait_for_sub="1"):
    pub = node.create_publisher(msg_type(kind), topic, qos(qos_spec))
    if wait_for_sub == "1" and not spin_until(node, lambda: pub.get_subscription_count() > 0):
        print("talker: no subscriber")
        return 1
    for i in range(int(count)):
        pub.publish(message(kind, i))
        time.sleep(0.02)
    # Keep the writer alive while the reliable samples are acknowledged and late joiners come.
    spin_until(node, lambda: False, 2.0 if wait_for_sub == "1" else 6.0)
    print(f"talker: published {count}")
    return 0


MANY_KINDS = ("BasicTypes", "Builtins", "Defaults", "Nested", "Strings")


def many_talkers(node, n, count):
    """Publishes `count` default messages on each of topics many_0 … many_{n-1}, whose types
    cycle through five of test_msgs' (so a recorder learns each type once for many topics)."""
    import test_msgs.msg

    kinds = [getattr(test_msgs.msg, k) for k in MANY_KINDS]
    pubs = [
        (node.create_publisher(kinds[i % len(kinds)], f"many_{i}", QoSProfile(depth=int(count))), kinds[i % len(kinds)])
        for i in range(int(n))
    ]
    if not spin_until(node, lambda: all(p.get_subscription_count() > 0 for p, _ in pubs)):
        print(f"many_talkers: subscribed {sum(p.get_subscription_count() > 0 for p, _ in pubs)} of {n}")
        return 1
    for _ in range(int(count)):
        for p, kind in pubs:
            p.publish(kind())
        time.sleep(0.02)
    spin_until(node, lambda: False, 2.0)
    print(f"many_talkers: published {count} on each of {n}")
    return 0


def silent_talkers(node, n, secs):
    """For `secs` seconds, publishes once a second on topics silent_0 … silent_{n-1} of
    test_msgs types, from a node that does not offer ~/get_type_description: a peer whose
    types a recorder cannot learn."""
    from rclpy.parameter import Parameter
    import test_msgs.msg

    silent = rclpy.create_node(
        "rclpy_silent",
        parameter_overrides=[Parameter("start_type_description_service", value=False)],
    )
    kinds = [getattr(test_msgs.msg, k) for k in MANY_KINDS]
    pubs = [
        (silent.create_publisher(kinds[i % len(kinds)], f"silent_{i}", 10), kinds[i % len(kinds)])
        for i in range(int(n))
    ]
    deadline = time.monotonic() + float(secs)
    while time.monotonic() < deadline:
        for p, kind in pubs:
            p.publish(kind())
        spin_until(silent, lambda: False, 1.0)
    silent.destroy_node()
    print(f"silent_talkers: published on {n} for {secs} s")
    return 0


def listener(node, topic, kind, count, qos_spec="10"):
    got = []
    node.create_subscription(msg_type(kind), topic, got.append, qos(qos_spec))
    spin_until(node, lambda: len(got) >= int(count))
    for m in got:
        print(f"got {m.data}" if kind == "string" else f"got {m.int64_value} {m.float64_value} {m.uint32_value}")
    ok = got[: int(count)] == [message(kind, i) for i in range(int(count))]
    print(f"listener: received {len(got)}")
    return 0 if ok else 1


def server(node, name, count):
    served = []

    def handle(req, resp):
        resp.int64_value = req.int64_value + 1
        resp.bool_value = not req.bool_value
        resp.string_value = f"rclpy answers '{req.string_value}'"
        served.append(req.int64_value)
        return resp

    node.create_service(BasicTypesSrv, name, handle)
    spin_until(node, lambda: len(served) >= int(count))
    # Let the last response be acknowledged.
    spin_until(node, lambda: False, 1.0)
    print(f"server: served {sorted(served)}")
    return 0 if len(served) >= int(count) else 1


def client(node, name, count):
    cli = node.create_client(BasicTypesSrv, name)
    if not cli.wait_for_service(timeout_sec=LIMIT):
        print("client: wait_for_service timed out")
        return 1
    print("client: service available")
    futures = []
    for i in range(int(count)):
        req = BasicTypesSrv.Request(int64_value=100 + i, bool_value=True, string_value=f"call {i}")
        futures.append((i, cli.call_async(req)))
    spin_until(node, lambda: all(f.done() for _, f in futures))
    right = 0
    for i, f in futures:
        if not f.done():
            print(f"client: call {i} unanswered")
            continue
        r = f.result()
        ok = r.int64_value == 2 * (100 + i) and r.string_value == f"rclev answers 'call {i}'"
        right += ok
        print(f"client: call {i} -> {r.int64_value} '{r.string_value}' {'ok' if ok else 'WRONG'}")
    print(f"client: right answers {right}/{count}")
    return 0 if right == int(count) else 1


def action_server(node, name):
    done = []

    def execute(goal_handle):
        order = goal_handle.request.order
        seq = [0, 1]
        feedback = Fibonacci.Feedback()
        for i in range(1, order):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                done.append("canceled")
                print(f"action_server: goal canceled after {len(seq)}")
                return Fibonacci.Result(sequence=seq)
            seq.append(seq[i] + seq[i - 1])
            feedback.sequence = seq
            goal_handle.publish_feedback(feedback)
            time.sleep(0.05)
        goal_handle.succeed()
        done.append("succeeded")
        print(f"action_server: goal of order {order} succeeded")
        return Fibonacci.Result(sequence=seq)

    ActionServer(
        node,
        Fibonacci,
        name,
        execute_callback=execute,
        goal_callback=lambda goal: GoalResponse.ACCEPT,
        cancel_callback=lambda handle: CancelResponse.ACCEPT,
        callback_group=ReentrantCallbackGroup(),
    )
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + LIMIT
    while len(done) < 2 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    print(f"action_server: {done}")
    return 0 if sorted(done) == ["canceled", "succeeded"] else 1


def action_client(node, name):
    client = ActionClient(node, Fibonacci, name)
    if not client.wait_for_server(timeout_sec=LIMIT):
        print("action_client: server not available")
        return 1
    print("action_client: server available")
    feedback = []
    send = client.send_goal_async(Fibonacci.Goal(order=6), feedback_callback=lambda f: feedback.append(list(f.feedback.sequence)))
    if not spin_until(node, send.done) or not send.result().accepted:
        print("action_client: goal not accepted")
        return 1
    result = send.result().get_result_async()
    spin_until(node, result.done)
    seq = list(result.result().result.sequence)
    print(f"action_client: result {seq} status {result.result().status} after {len(feedback)} feedback")
    ok = seq == [0, 1, 1, 2, 3, 5, 8] and result.result().status == 4 and len(feedback) > 0
    # A second goal, canceled once its first feedback arrives.
    feedback2 = []
    send2 = client.send_goal_async(Fibonacci.Goal(order=1000), feedback_callback=lambda f: feedback2.append(1))
    spin_until(node, lambda: send2.done() and len(feedback2) > 0)
    cancel = send2.result().cancel_goal_async()
    spin_until(node, cancel.done)
    result2 = send2.result().get_result_async()
    spin_until(node, result2.done)
    print(f"action_client: canceled goal status {result2.result().status}, cancel return {cancel.result().return_code}")
    ok = ok and result2.result().status == 5
    return 0 if ok else 1


def clock(node, base_s):
    """/clock at 100 Hz: 1 s of sim time at 1x, 1 s paused, 2 s of sim time at 2x."""
    pub = node.create_publisher(Clock, "/clock", 10)
    if not spin_until(node, lambda: pub.get_subscription_count() > 0):
        print("clock: no subscriber")
        return 1
    base = int(base_s) * 10**9

    def at(ns):
        pub.publish(Clock(clock=Time(sec=ns // 10**9, nanosec=ns % 10**9)))

    phases = [(100, 10_000_000), (100, 0), (100, 20_000_000)]  # (steps, sim ns per 10 ms step)
    now = base
    at(now)
    for steps, step in phases:
        for _ in range(steps):
            time.sleep(0.01)
            now += step
            at(now)
    for _ in range(20):
        time.sleep(0.01)
        at(now)
    print(f"clock: ended at {now}")
    return 0


def incompatible_sub(node, topic):
    """A reliable subscription that expects a best-effort publisher: reports the clash."""
    from rclpy.event_handler import SubscriptionEventCallbacks

    seen = []
    callbacks = SubscriptionEventCallbacks(incompatible_qos=lambda e: seen.append(e.last_policy_kind))
    node.create_subscription(String, topic, lambda m: None, QoSProfile(depth=10), event_callbacks=callbacks)
    spin_until(node, lambda: len(seen) > 0)
    print(f"incompatible_sub: requested incompatible {[str(p) for p in seen]}")
    spin_until(node, lambda: False, 1.0)
    return 0 if seen else 1


def incompatible_pub(node, topic):
    """A best-effort publisher that expects a reliable subscription: reports the clash."""
    from rclpy.event_handler import PublisherEventCallbacks

    seen = []
    callbacks = PublisherEventCallbacks(incompatible_qos=lambda e: seen.append(e.last_policy_kind))
    node.create_publisher(String, topic, qos("10,be"), event_callbacks=callbacks)
    spin_until(node, lambda: len(seen) > 0)
    print(f"incompatible_pub: offered incompatible {[str(p) for p in seen]}")
    spin_until(node, lambda: False, 1.0)
    return 0 if seen else 1


def publisher_info(node, topic):
    """Prints what rclpy's graph says of the publishers on a topic (type and type hash)."""
    infos = []

    def look():
        infos[:] = node.get_publishers_info_by_topic(topic)
        return len(infos) > 0

    spin_until(node, look)
    for info in infos:
        print(f"publisher {info.topic_type} {info.topic_type_hash} {info.qos_profile.durability} "
              f"node={info.node_namespace.rstrip('/')}/{info.node_name}")
    return 0 if infos else 1


def full_name(namespace, name):
    return f"{namespace.rstrip('/')}/{name}"


def node_list(node, *expected):
    """Waits until every expected node (`/ns/name`) is on rclpy's graph; prints the nodes, and
    each expected node's publishers and services as `ros2 node info` finds them."""
    names = []

    def look():
        names[:] = sorted(full_name(ns, n) for n, ns in node.get_node_names_and_namespaces())
        return all(e in names for e in expected)

    found = spin_until(node, look)
    print("nodes: " + " ".join(names))
    for full in expected:
        ns, _, name = full.rpartition("/")
        ns = ns or "/"
        try:
            pubs = node.get_publisher_names_and_types_by_node(name, ns)
            services = node.get_service_names_and_types_by_node(name, ns)
        except Exception as e:  # rclpy raises NodeNameNonExistentError for an unknown node
            print(f"node {full}: {e!r}")
            found = False
            continue
        for topic, types in sorted(pubs):
            print(f"node {full} publishes {topic} {','.join(types)}")
        for service, types in sorted(services):
            print(f"node {full} serves {service} {','.join(types)}")
    return 0 if found else 1


def spin_until_interrupted(node, secs):
    """Spins `node` for `secs` seconds, or until Ctrl-C (`Peer::interrupt`) shuts rclpy down."""
    deadline = time.monotonic() + float(secs)
    try:
        while time.monotonic() < deadline and rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # Ctrl-C shut the context down during a spin: rclpy raises whatever the call it was in
        # met then ("the given context is not valid" creating its wait timer, seen under load).
        if rclpy.ok():
            raise


def stay(node, secs):
    """Keeps this node and one more (`/peer_ns/other`, publishing `chatter`) on the graph for
    `secs` seconds."""
    other = rclpy.create_node("other", namespace="/peer_ns")
    other.create_publisher(String, "chatter", 10)
    print("stay: up", flush=True)
    spin_until_interrupted(node, secs)
    other.destroy_node()
    print("stay: done")
    return 0


def param_client(node, target):
    """Drives `target`'s parameters through rclpy's AsyncParameterClient, as `ros2 param`
    does, and prints what it saw, including `target`'s `/parameter_events`."""
    from rcl_interfaces.msg import ParameterEvent
    from rclpy.parameter import Parameter, parameter_value_to_python
    from rclpy.parameter_client import AsyncParameterClient

    events = []
    node.create_subscription(ParameterEvent, "/parameter_events",
                             lambda e: events.append(e) if e.node == target else None, 10)
    client = AsyncParameterClient(node, target)
    if not client.wait_for_services(timeout_sec=LIMIT):
        print("param_client: services not ready")
        return 1

    def wait(future):
        spin_until(node, future.done)
        return future.result()

    listed = wait(client.list_parameters())
    print("list: " + " ".join(sorted(listed.result.names)))
    got = wait(client.get_parameters(["gain", "arm.speed", "nope"]))
    print("get: " + " ".join(str(parameter_value_to_python(v)) for v in got.values))
    for value in (8, 7):
        res = wait(client.set_parameters([Parameter("gain", value=value)]))
        r = res.results[0]
        print(f"set gain={value}: {'ok' if r.successful else 'refused: ' + r.reason}")
    described = wait(client.describe_parameters(["gain"]))
    d = described.descriptors[0]
    print(f"describe gain: type={d.type} description={d.description!r} "
          f"range={[(r.from_value, r.to_value, r.step) for r in d.integer_range]}")
    spin_until(node, lambda: any(p.name == "gain" for e in events for p in e.changed_parameters))
    for e in events:
        for p in e.changed_parameters:
            print(f"event changed {p.name}={p.value.integer_value}")
    return 0


def param_server(node, secs):
    """Declares `gain` (rejecting 7) and `label` on this node, prints every parameter event of
    other nodes it sees, for `secs` seconds."""
    from rcl_interfaces.msg import ParameterEvent, SetParametersResult

    node.declare_parameter("gain", 3)
    node.declare_parameter("label", "rclpy")

    def check(params):
        bad = any(p.name == "gain" and p.value == 7 for p in params)
        return SetParametersResult(successful=not bad, reason="seven is unlucky" if bad else "")

    node.add_on_set_parameters_callback(check)
    from rclpy.serialization import deserialize_message

    # Taken raw and decoded here: an event that does not decode is printed with its bytes, for
    # the test to show. The Ctrl-C that ends this peer comes right after the test's last set,
    # so it can land while rclpy converts that set's own event (`gain=9`) into Python objects:
    # the signal's exception, raised in the message's Python constructor, fails the conversion
    # ("Unable to convert … to a Python type"; 3 of 40 loaded runs). Decoding the same bytes
    # again tells that from an event that really does not decode.
    def raw_event(raw):
        try:
            e = deserialize_message(raw, ParameterEvent)
        except Exception:
            try:
                e = deserialize_message(raw, ParameterEvent)
            except Exception as x:
                print(f"param_server: undecodable event ({x!r}): {raw.hex()}", flush=True)
                return
        if e.node != node.get_fully_qualified_name() and e.changed_parameters:
            print(f"event from {e.node}: changed "
                  + " ".join(f"{p.name}" for p in e.changed_parameters), flush=True)

    node.create_subscription(ParameterEvent, "/parameter_events", raw_event, 10, raw=True)
    print("param_server: up", flush=True)
    spin_until_interrupted(node, secs)
    print(f"param_server: gain={node.get_parameter('gain').value}")
    return 0


def rosout(node, logger, *levels):
    """Waits for a `/rosout` record of `logger` at each of `levels` (10 debug … 50 fatal),
    taking the publishers' transient-local history too; prints each record."""
    from rcl_interfaces.msg import Log

    q = QoSProfile(depth=1000)
    q.durability = DurabilityPolicy.TRANSIENT_LOCAL
    records = []
    node.create_subscription(Log, "/rosout",
                             lambda m: records.append(m) if m.name == logger else None, q)
    wanted = {int(level) for level in levels}
    spin_until(node, lambda: wanted <= {r.level for r in records})
    for r in records:
        print(f"rosout {r.level} {r.name}: {r.msg} ({r.file}:{r.line})")
    return 0 if wanted <= {r.level for r in records} else 1


def type_description(node, target, topic):
    """Asks node `target` (`/ns/name`) for the description of the type its publisher on
    `topic` announces, and checks the description against that hash (REP-2016: SHA-256 of the
    description's JSON without default values)."""
    import hashlib
    import json
    from type_description_interfaces.srv import GetTypeDescription

    infos = []

    def look():
        infos[:] = [i for i in node.get_publishers_info_by_topic(topic)
                    if full_name(i.node_namespace, i.node_name) == target]
        return len(infos) > 0

    if not spin_until(node, look):
        print(f"type_description: no publisher of {target} on {topic}")
        return 1
    announced = str(infos[0].topic_type_hash)
    client = node.create_client(GetTypeDescription, f"{target}/get_type_description")
    if not client.wait_for_service(timeout_sec=LIMIT):
        print("type_description: no service")
        return 1
    future = client.call_async(GetTypeDescription.Request(
        type_name=infos[0].topic_type, type_hash=announced, include_type_sources=False))
    spin_until(node, future.done)
    res = future.result()
    print(f"type_description: successful={res.successful} reason={res.failure_reason!r}")

    def individual(d):
        return {"type_name": d.type_name, "fields": [
            {"name": f.name, "type": {"type_id": f.type.type_id, "capacity": f.type.capacity,
                                      "string_capacity": f.type.string_capacity,
                                      "nested_type_name": f.type.nested_type_name}}
            for f in d.fields]}

    desc = res.type_description
    text = json.dumps({"type_description": individual(desc.type_description),
                       "referenced_type_descriptions":
                           [individual(r) for r in desc.referenced_type_descriptions]},
                      separators=(", ", ": "))
    computed = "RIHS01_" + hashlib.sha256(text.encode()).hexdigest()
    print(f"type_description: {desc.type_description.type_name} announced={announced} "
          f"computed={computed}")
    return 0 if res.successful and computed == announced else 1


def flood_client(node, name, secs):
    """A plain client that loops call_async on a std_srvs/Trigger service for SECS seconds,
    never waiting for an answer (what a buggy or hostile caller does); prints how many calls
    it made and how many were answered meanwhile."""
    from std_srvs.srv import Trigger

    cli = node.create_client(Trigger, name)
    if not cli.wait_for_service(timeout_sec=LIMIT):
        print("flood_client: no service")
        return 1
    print("ready", flush=True)
    calls, answered, futures = 0, 0, []
    until = time.monotonic() + float(secs)
    while time.monotonic() < until:
        futures.append(cli.call_async(Trigger.Request()))
        calls += 1
        if calls % 100 == 0:
            rclpy.spin_once(node, timeout_sec=0)
            waiting = [f for f in futures if not f.done()]
            answered += len(futures) - len(waiting)
            futures = waiting
    print(f"flood_client: calls={calls} answered={answered}")
    return 0


def logger_server(node, secs):
    """A second node, `rclpy_logs`, offering the logger services (`enable_logger_service`),
    spun with this one for `secs` seconds."""
    from rclpy.executors import SingleThreadedExecutor

    logs = rclpy.create_node("rclpy_logs", enable_logger_service=True)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(logs)
    print("logger_server: up", flush=True)
    deadline = time.monotonic() + float(secs)
    try:
        while time.monotonic() < deadline and rclpy.ok():
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    executor.remove_node(logs)
    logs.destroy_node()
    return 0


def logger_client(node, target, logger):
    """Drives `target`'s `~/get_logger_levels` and `~/set_logger_levels` about `logger` (and
    its child, and a logger never set) and prints every answer."""
    from rcl_interfaces.msg import LoggerLevel
    from rcl_interfaces.srv import GetLoggerLevels, SetLoggerLevels

    get = node.create_client(GetLoggerLevels, f"{target}/get_logger_levels")
    put = node.create_client(SetLoggerLevels, f"{target}/set_logger_levels")
    for c in (get, put):
        if not c.wait_for_service(timeout_sec=LIMIT):
            print("logger_client: services not ready")
            return 1

    def call(client, request):
        future = client.call_async(request)
        spin_until(node, future.done)
        return future.result()

    def show(names):
        answer = call(get, GetLoggerLevels.Request(names=names))
        print("get: " + " ".join(f"{l.name}={l.level}" for l in answer.levels), flush=True)

    show([logger, f"{logger}.child", "never.set"])
    levels = [(logger, 40), (f"{logger}.child", 10), (logger, 33), ("", 30)]
    answer = call(put, SetLoggerLevels.Request(
        levels=[LoggerLevel(name=n, level=v) for n, v in levels]))
    for (n, v), r in zip(levels, answer.results):
        print(f"set {n or '(default)'}={v}: "
              + ("ok" if r.successful else f"refused: {r.reason}"), flush=True)
    show([logger, f"{logger}.child", "", "never.set"])
    return 0


# The modes told how long to run: which argument says so.
SECS_ARG = {"stay": 0, "param_server": 0, "flood_client": 1, "logger_server": 0, "silent_talkers": 1}


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    # Every mode ends within 1.75 LIMITs (plus the seconds it is told to stay); one that hangs
    # (inside rclpy or Fast DDS) prints every thread's Python stack to stderr and exits, so that
    # the test shows where it hung.
    stays = SECS_ARG.get(mode)
    faulthandler.dump_traceback_later(1.75 * LIMIT + (float(args[stays]) if stays is not None else 0), exit=True)
    rclpy.init()
    node = rclpy.create_node(f"rclpy_{mode}")
    try:
        rc = globals()[mode](node, *args)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    sys.exit(rc)


if __name__ == "__main__":
    main()
