"""A real ROS 2 Jazzy chatter (rclpy on rmw_fastrtps_cpp, Fast DDS 2.14.5 with its default
shared-memory + UDP transports) for the Fast DDS version-skew runs (skew.sh).

    python py_chatter.py talker|listener

Prints the same lines as rclev-dds's `chatter` example ("Publishing: '...'", "I heard:
'...'"), runs until SIGINT (or SIGTERM) and then exits 0.
"""

import signal
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from std_msgs.msg import String


def main():
    role = sys.argv[1] if len(sys.argv) > 1 else "talker"
    rclpy.init()
    signal.signal(signal.SIGTERM, lambda *_: rclpy.try_shutdown())
    node = rclpy.create_node(f"py_{role}")
    if role == "talker":
        pub = node.create_publisher(String, "chatter", 10)
        count = [0]

        def tick():
            count[0] += 1
            data = f"Hello World: {count[0]}"
            print(f"Publishing: '{data}'", flush=True)
            pub.publish(String(data=data))

        node.create_timer(0.1, tick)
    else:
        node.create_subscription(
            String, "chatter", lambda m: print(f"I heard: '{m.data}'", flush=True), 10
        )
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
