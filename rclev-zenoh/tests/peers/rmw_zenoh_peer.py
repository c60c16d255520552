"""An rmw_zenoh (Jazzy >= 0.2.5, Kilted) node emulated byte for byte in Python
(`eclipse-zenoh`), from rmw_zenoh's design doc, for rclev-zenoh's wire tests.

    rmw_zenoh_peer.py talker TYPE_HASH COUNT
    rmw_zenoh_peer.py listener TYPE_HASH COUNT
    rmw_zenoh_peer.py client SERVICE_TYPE_HASH COUNT

Every mode connects as rmw_zenoh does (peer, router at tcp/localhost:7447, multicast
scouting off), waits for the router, declares its node's liveliness token
(`@ros2_lv/0/<zid>/0/0/NN/%/%/<node>`) and an entity token, and prints what it saw:

- talker (node py_talker): an MP token for /chatter (std_msgs/msg/String, depth 10);
  once an MS token for /chatter appears, puts COUNT CDR strings `py <i>` with the 33-byte
  attachment (sequence from 1, timestamp, GID); prints `gid: <hex>` (the GID it uses: 16
  bytes of its own, since the GID's hash function, XXH3, is not in the venv) and `sent: N`.
- listener (node py_listener): an MS token for /chatter; prints every liveliliness token of
  the domain (`token: <keyexpr>`), then each sample (`sample: <keyexpr> <payload hex>
  <attachment hex>`) until COUNT have come.
- client (node py_client): an SC token for /flip (std_srvs/srv/SetBool); once an SS token
  appears, queries COUNT times with `data: true` (target all complete, no consolidation)
  and prints each reply (`reply: <payload hex> <attachment hex>`) and `gid: <hex>`.

The Rust side bounds its run.
"""

import json
import struct
import sys
import time

import zenoh

QOS_DEPTH_10 = "::,10:,:,:,,"
STRING = "std_msgs::msg::dds_::String_"
SET_BOOL = "std_srvs::srv::dds_::SetBool_"


def session():
    config = zenoh.Config.from_json5(
        json.dumps(
            {
                "mode": "peer",
                "connect": {"endpoints": ["tcp/localhost:7447"]},
                "listen": {"endpoints": ["tcp/localhost:0"]},
                "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": True}},
            }
        )
    )
    s = zenoh.open(config)
    while not list(s.info.routers_zid()):
        time.sleep(0.2)
    return s


def tokens(s, zid, node, kind, entity):
    """The node's NN token and one entity token, as rmw_zenoh writes them."""
    base = f"@ros2_lv/0/{zid}/0"
    nn = s.liveliness().declare_token(f"{base}/0/NN/%/%/{node}")
    ent = s.liveliness().declare_token(f"{base}/1/{kind}/%/%/{node}/{entity}")
    return nn, ent


def attachment(seq, gid):
    return struct.pack("<qq", seq, time.time_ns()) + b"\x10" + gid


def wait_for_token(s, needle):
    while True:
        for reply in s.liveliness().get("@ros2_lv/0/**", timeout=2.0):
            if reply.ok is not None and needle in str(reply.ok.key_expr):
                return
        time.sleep(0.2)


def cdr_string(text):
    data = text.encode() + b"\0"
    return b"\x00\x01\x00\x00" + struct.pack("<I", len(data)) + data


def main():
    mode, type_hash, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    zenoh.init_log_from_env_or("error")
    s = session()
    zid = str(s.zid())
    gid = bytes(range(0xA0, 0xB0))
    if mode == "talker":
        held = tokens(s, zid, "py_talker", "MP", f"%chatter/{STRING}/{type_hash}/{QOS_DEPTH_10}")
        print("gid: " + gid.hex(), flush=True)
        wait_for_token(s, "/MS/%/%/")
        for i in range(count):
            s.put(f"0/chatter/{STRING}/{type_hash}", cdr_string(f"py {i}"),
                  attachment=attachment(i + 1, gid))
        print(f"sent: {count}", flush=True)
        time.sleep(2)
    elif mode == "listener":
        held = tokens(s, zid, "py_listener", "MS", f"%chatter/{STRING}/{type_hash}/{QOS_DEPTH_10}")
        sub = s.declare_subscriber(f"0/chatter/{STRING}/{type_hash}")
        wait_for_token(s, "/MP/%/%/talker/%chatter/")
        for reply in s.liveliness().get("@ros2_lv/0/**", timeout=2.0):
            if reply.ok is not None:
                print("token: " + str(reply.ok.key_expr), flush=True)
        print("ready", flush=True)
        for _ in range(count):
            sample = sub.recv()
            att = sample.attachment.to_bytes().hex() if sample.attachment is not None else "-"
            print(f"sample: {sample.key_expr} {sample.payload.to_bytes().hex()} {att}", flush=True)
    elif mode == "client":
        held = tokens(s, zid, "py_client", "SC", f"%flip/{SET_BOOL}/{type_hash}/{QOS_DEPTH_10}")
        wait_for_token(s, "/SS/%/%/")
        request = b"\x00\x01\x00\x00\x01"
        print("gid: " + gid.hex(), flush=True)
        for i in range(count):
            replies = s.get(f"0/flip/{SET_BOOL}/{type_hash}", payload=request,
                            attachment=attachment(i + 1, gid),
                            target=zenoh.QueryTarget.ALL_COMPLETE,
                            consolidation=zenoh.ConsolidationMode.NONE, timeout=20.0)
            for reply in replies:
                if reply.ok is not None:
                    att = reply.ok.attachment.to_bytes().hex() if reply.ok.attachment is not None else "-"
                    print(f"reply: {reply.ok.payload.to_bytes().hex()} {att}", flush=True)
                else:
                    print("error: " + reply.err.payload.to_string(), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")
    del held
    s.close()


if __name__ == "__main__":
    main()
