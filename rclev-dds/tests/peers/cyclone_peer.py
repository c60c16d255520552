"""A plain Eclipse Cyclone DDS peer (the `cyclonedds` Python package from PyPI) speaking ROS 2's
conventions as rmw_cyclonedds does, for rclev's DDS interop tests.

    cyclone_peer.py MODE ARGS...

Topics are `rt/<name>` with ROS DDS type names; services put rmw_cyclonedds's 16-byte request
header (client id, sequence number) before the body and name themselves in USER_DATA
(`clientid=` / `serviceid=`). Discovery is configured as rmw_cyclonedds does for
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST. Every wait is bounded; exit 0 means success.
"""

import os
import sys
import time
from dataclasses import dataclass

os.environ["CYCLONEDDS_URI"] = (
    "<CycloneDDS><Domain Id='any'><General><AllowMulticast>false</AllowMulticast></General>"
    "<Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>"
    "<Peers><Peer address='localhost'/></Peers></Discovery></Domain></CycloneDDS>"
)

from cyclonedds.core import Policy, Qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct  # noqa: E402
from cyclonedds.idl.types import int64, uint64  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402

LIMIT = 20.0
CLIENT_ID = 0x0123456789ABCDEF


@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str


# example_interfaces/srv/AddTwoInts on the wire as rmw_cyclonedds frames it: the request
# header's two 64-bit words, then the body.
@dataclass
class AddTwoInts_Request_(IdlStruct, typename="example_interfaces::srv::dds_::AddTwoInts_Request_"):
    client: uint64
    seq: int64
    a: int64
    b: int64


@dataclass
class AddTwoInts_Response_(IdlStruct, typename="example_interfaces::srv::dds_::AddTwoInts_Response_"):
    client: uint64
    seq: int64
    sum: int64


def qos(user_data=None):
    policies = [
        Policy.Reliability.Reliable(duration(seconds=1)),
        Policy.History.KeepLast(10),
        Policy.Durability.Volatile,
        # XCDR1, as rmw_cyclonedds writes ROS messages.
        Policy.DataRepresentation(use_cdrv0_representation=True),
    ]
    if user_data is not None:
        policies.append(Policy.Userdata(user_data.encode()))
    return Qos(*policies)


def participant():
    return DomainParticipant(int(os.environ.get("ROS_DOMAIN_ID", "0")))


def wait(done, limit=LIMIT):
    deadline = time.monotonic() + limit
    while not done() and time.monotonic() < deadline:
        time.sleep(0.02)
    return done()


def matched(entity):
    try:
        return len(entity.get_matched_subscriptions()) if isinstance(entity, DataWriter) else len(entity.get_matched_publications())
    except Exception:  # noqa: BLE001 - older bindings: fall back to the status counts
        return 1


def talker(count):
    dp = participant()
    w = DataWriter(dp, Topic(dp, "rt/chatter", String_), qos=qos())
    if not wait(lambda: matched(w) > 0):
        print("talker: no reader")
        return 1
    for i in range(int(count)):
        w.write(String_(data=f"hello from cyclone {i}"))
        time.sleep(0.02)
    time.sleep(1.0)
    print(f"talker: published {count}")
    return 0


@dataclass
class Unknown_(IdlStruct, typename="rclev_nobody_msgs::msg::dds_::Unknown_"):
    value: int64


def raw_writer(secs):
    """For `secs` seconds, writes a type no ROS node describes on rt/raw_unknown, from a
    participant that publishes no ros_discovery_info: a DDS writer outside ROS 2."""
    dp = participant()
    w = DataWriter(dp, Topic(dp, "rt/raw_unknown", Unknown_), qos=qos())
    deadline = time.monotonic() + float(secs)
    n = 0
    while time.monotonic() < deadline:
        w.write(Unknown_(value=n))
        n += 1
        time.sleep(0.1)
    print(f"raw_writer: wrote {n}")
    return 0


def listener(count):
    dp = participant()
    r = DataReader(dp, Topic(dp, "rt/chatter", String_), qos=qos())
    got = []

    def take():
        got.extend(s.data for s in r.take(N=100))
        return len(got) >= int(count)

    wait(take)
    for g in got:
        print(f"got {g}")
    print(f"listener: received {len(got)}")
    # A volatile Cyclone reader drops what a writer sent before the reader matched it (the
    # writer may match first): the talker keeps publishing, and what arrives must be a
    # gapless run of its numbered messages.
    numbers = [int(g.rsplit(" ", 1)[1]) for g in got if g.startswith("hello from rclev ")]
    in_order = numbers == list(range(numbers[0], numbers[0] + len(numbers))) if numbers else False
    return 0 if len(numbers) >= int(count) and in_order else 1


def service_id(n):
    return ".".join(f"{b:02x}" for b in bytes([1, 16] + [0xCC] * 10 + [0, 0, 0, n]))


def server(count):
    dp = participant()
    ident = f"serviceid={service_id(1)};"
    requests = DataReader(dp, Topic(dp, "rq/add_two_intsRequest", AddTwoInts_Request_), qos=qos(ident))
    replies = DataWriter(dp, Topic(dp, "rr/add_two_intsReply", AddTwoInts_Response_), qos=qos(ident))
    served = []

    def serve():
        for req in requests.take(N=100):
            replies.write(AddTwoInts_Response_(client=req.client, seq=req.seq, sum=req.a + req.b))
            served.append((req.seq, req.a, req.b))
        return len(served) >= int(count)

    wait(serve)
    time.sleep(1.0)
    print(f"server: served {served}")
    return 0 if len(served) >= int(count) else 1


def client(count):
    dp = participant()
    ident = f"clientid={service_id(2)};"
    replies = DataReader(dp, Topic(dp, "rr/add_two_intsReply", AddTwoInts_Response_), qos=qos(ident))
    requests = DataWriter(dp, Topic(dp, "rq/add_two_intsRequest", AddTwoInts_Request_), qos=qos(ident))
    if not wait(lambda: matched(requests) > 0 and matched(replies) > 0):
        print("client: no service")
        return 1
    for i in range(int(count)):
        requests.write(AddTwoInts_Request_(client=CLIENT_ID, seq=i + 1, a=i, b=1000))
    answers = {}

    def collect():
        for rep in replies.take(N=100):
            if rep.client == CLIENT_ID:
                answers[rep.seq] = rep.sum
        return len(answers) >= int(count)

    wait(collect)
    right = sum(answers.get(i + 1) == i + 1000 for i in range(int(count)))
    print(f"client: answers {sorted(answers.items())}")
    print(f"client: right answers {right}/{count}")
    return 0 if right == int(count) else 1


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    sys.exit(globals()[mode](*args))


if __name__ == "__main__":
    main()
