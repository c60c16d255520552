"""rclev bag play's oracles (rclev-cli/tests/bag_play.rs): bags written by rosbags, and rclpy
(Jazzy, rmw_fastrtps_cpp) nodes that receive what `rclev bag play` publishes.

    bag_play_peer.py write BAG KIND   -- a rosbag2 version-9 MCAP bag (see BAGS)
    bag_play_peer.py listen COUNT LIMIT [--best-effort] TOPIC:TYPE...
        -- subscribes (raw CDR) and prints one JSON line per message, {"topic", "hex",
           "recv" (monotonic s)}, until COUNT arrived or LIMIT s passed; then a line
           {"qos": {topic: [reliability, durability] of each publisher}}
    bag_play_peer.py simclock LIMIT TOPIC:TYPE
        -- a node with use_sim_time whose 0.1 s timer counts its firings (and the sim time
           each saw); it also subscribes to TOPIC (so that --wait-for-subscribers sees it) and
           ends once /clock stopped for 1 s after it started (or after LIMIT s); prints
           {"fires", "nows"}

Every wait is bounded; exit status 0 unless something failed outright.
"""
import importlib
import json
import sys
import time

import numpy as np

T0 = 1_765_000_000_000_000_000
MS = 1_000_000


def bag_mixed(w, store):
    """50 strings every 40 ms on /chatter, 10 images every 200 ms on /camera (2 s)."""
    String = store.types["std_msgs/msg/String"]
    Image = store.types["sensor_msgs/msg/Image"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    chatter = w.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
    camera = w.add_connection("/camera", "sensor_msgs/msg/Image", typestore=store)
    out = []
    for i in range(50):
        out.append((T0 + i * 40 * MS, chatter,
                    store.serialize_cdr(String(data=f"hello {i}"), "std_msgs/msg/String")))
    for i in range(10):
        img = Image(header=Header(stamp=Time(sec=i, nanosec=7), frame_id="cam"), height=16,
                    width=32, encoding="rgb8", is_bigendian=0, step=96,
                    data=(np.arange(16 * 96) + i).astype(np.uint8))
        out.append((T0 + 5 * MS + i * 200 * MS, camera,
                    store.serialize_cdr(img, "sensor_msgs/msg/Image")))
    return out


def bag_basic(w, store):
    """20 test_msgs/BasicTypes every 50 ms on /basic."""
    from rosbags.typesys import get_types_from_msg
    # rosbags' Jazzy store has no test_msgs: the definition from the installed package.
    share = importlib.import_module("test_msgs").__file__.split("/lib/")[0] + "/share"
    text = open(f"{share}/test_msgs/msg/BasicTypes.msg").read()
    store.register(get_types_from_msg(text, "test_msgs/msg/BasicTypes"))
    Basic = store.types["test_msgs/msg/BasicTypes"]
    conn = w.add_connection("/basic", "test_msgs/msg/BasicTypes", typestore=store)
    out = []
    for i in range(20):
        m = Basic(bool_value=i % 2 == 0, byte_value=i, char_value=65 + i, float32_value=0.5 * i,
                  float64_value=-1.25 * i, int8_value=-i, uint8_value=i, int16_value=-300 * i,
                  uint16_value=300 * i, int32_value=-70000 * i, uint32_value=70000 * i,
                  int64_value=-(1 << 40) * i, uint64_value=(1 << 40) * i)
        out.append((T0 + i * 50 * MS, conn, store.serialize_cdr(m, "test_msgs/msg/BasicTypes")))
    return out


def bag_clock(w, store):
    """21 strings every 100 ms on /tick (2 s)."""
    String = store.types["std_msgs/msg/String"]
    conn = w.add_connection("/tick", "std_msgs/msg/String", typestore=store)
    return [(T0 + i * 100 * MS, conn,
             store.serialize_cdr(String(data=f"tick {i}"), "std_msgs/msg/String"))
            for i in range(21)]


BAGS = {"mixed": bag_mixed, "basic": bag_basic, "clock": bag_clock}


def write(bag, kind):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_JAZZY)
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        for t, conn, raw in sorted(BAGS[kind](w, store), key=lambda m: m[0]):
            w.write(conn, t, raw)


def msg_class(type_name):
    pkg, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def subscriptions(args):
    return [(a.split(":")[0], msg_class(a.split(":")[1])) for a in args]


def listen(count, limit, *args):
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    best_effort = "--best-effort" in args
    topics = subscriptions([a for a in args if a != "--best-effort"])
    rclpy.init()
    node = rclpy.create_node("bag_play_listener")
    qos = QoSProfile(depth=1000)
    if best_effort:
        qos.reliability = ReliabilityPolicy.BEST_EFFORT
    got = []

    def on(topic):
        def cb(raw):
            got.append(1)
            print(json.dumps({"topic": topic, "hex": raw.hex(), "recv": time.monotonic()}))
        return cb

    for topic, cls in topics:
        node.create_subscription(cls, topic, on(topic), qos, raw=True)
    end = time.monotonic() + float(limit)
    qos_seen = {}
    while len(got) < int(count) and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
        for topic, _ in topics:
            infos = node.get_publishers_info_by_topic(topic)
            if infos:
                qos_seen[topic] = [[i.qos_profile.reliability.name.lower(),
                                    i.qos_profile.durability.name.lower()] for i in infos]
    # A moment for anything beyond COUNT (a topic that should not be played) to show up.
    settle = time.monotonic() + 0.3
    while time.monotonic() < settle:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps({"qos": qos_seen}))
    node.destroy_node()
    rclpy.shutdown()


def simclock(limit, topic_arg):
    import rclpy
    from rclpy.parameter import Parameter
    rclpy.init()
    node = rclpy.create_node("bag_play_simclock",
                             parameter_overrides=[Parameter("use_sim_time", value=True)])
    topic, cls = subscriptions([topic_arg])[0]
    node.create_subscription(cls, topic, lambda m: None, 10)
    nows = []
    node.create_timer(0.1, lambda: nows.append(node.get_clock().now().nanoseconds))
    last = {"t": None}
    node.create_subscription(msg_class("rosgraph_msgs/msg/Clock"), "/clock",
                             lambda m: last.update(t=time.monotonic()),
                             rclpy.qos.qos_profile_sensor_data)
    end = time.monotonic() + float(limit)
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.02)
        if last["t"] is not None and time.monotonic() - last["t"] > 1.0:
            break
    print(json.dumps({"fires": len(nows), "nows": nows}))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    {"write": write, "listen": listen, "simclock": simclock}[sys.argv[1]](*sys.argv[2:])
