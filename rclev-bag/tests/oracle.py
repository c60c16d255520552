"""The Python oracles of rclev-bag's tests.

read BAG    -- every message of the bag as JSON lines, decoded twice: by rosbags (its own
               Jazzy type store, reading metadata.yaml and the MCAP file) and by
               mcap-ros2-support (from the schema text in the file), each line tagged "via".
write BAG   -- writes a rosbag2 version-9 MCAP bag with rosbags (see MESSAGES).
"""
import json
import sys
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

STORE = get_typestore(Stores.ROS2_JAZZY)
T0 = 1_765_000_000_000_000_000
MS = 1_000_000


def plain(value):
    """A message (rosbags dataclass or mcap_ros2 object) as JSON-ready values."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {k: plain(getattr(value, k)) for k in value.__dataclass_fields__ if k != "__msgtype__"}
    if hasattr(value, "__slots__"):
        return {k: plain(getattr(value, k)) for k in value.__slots__ if not k.startswith("_")}
    return value


def read(bag):
    with Reader(bag) as reader:
        # A type rosbags' store lacks (test_msgs, a robot's own) is learnt from the bag's
        # schema text, as rosbags' users do: that text is then under test too.
        for conn in reader.connections:
            if conn.msgtype not in STORE.types:
                STORE.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
        for conn, t, raw in reader.messages():
            msg = STORE.deserialize_cdr(raw, conn.msgtype)
            print(json.dumps({"via": "rosbags", "topic": conn.topic, "type": conn.msgtype,
                              "t": t, "msg": plain(msg)}))
    from mcap_ros2.reader import read_ros2_messages
    for f in sorted(Path(bag).glob("*.mcap")):
        for m in read_ros2_messages(str(f)):
            print(json.dumps({"via": "mcap", "topic": m.channel.topic,
                              "type": m.schema.name, "t": m.log_time_ns,
                              "msg": plain(m.ros_msg)}))


def write(bag):
    String = STORE.types["std_msgs/msg/String"]
    Image = STORE.types["sensor_msgs/msg/Image"]
    Header = STORE.types["std_msgs/msg/Header"]
    Time = STORE.types["builtin_interfaces/msg/Time"]
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        chatter = w.add_connection("/chatter", "std_msgs/msg/String", typestore=STORE)
        camera = w.add_connection("/camera", "sensor_msgs/msg/Image", typestore=STORE)
        for i in range(20):
            t = T0 + i * 50 * MS
            w.write(chatter, t, STORE.serialize_cdr(String(data=f"hello {i}"), "std_msgs/msg/String"))
            img = Image(header=Header(stamp=Time(sec=i, nanosec=7), frame_id="cam"), height=2,
                        width=3, encoding="rgb8", is_bigendian=0, step=9,
                        data=np.arange(18, dtype=np.uint8) + i)
            w.write(camera, t + 10 * MS, STORE.serialize_cdr(img, "sensor_msgs/msg/Image"))


if __name__ == "__main__":
    {"read": read, "write": write}[sys.argv[1]](sys.argv[2])
