"""A plain Zenoh peer (zenoh-python, `eclipse-zenoh`) for rclev-zenoh's interop tests.

    zenoh_listener.py KEY ENDPOINT

Opens a session set up as an rmw_zenoh node's (a peer dialling the router at ENDPOINT,
multicast scouting off, gossip on), waits until a router is connected, subscribes to KEY,
prints `ready`, then prints the payload of the first sample it receives (`heard: <text>`) and
exits. The Rust side bounds its run.
"""

import json
import sys
import time

import zenoh


def main() -> None:
    key, endpoint = sys.argv[1], sys.argv[2]
    zenoh.init_log_from_env_or("error")
    config = zenoh.Config.from_json5(
        json.dumps(
            {
                "mode": "peer",
                "connect": {"endpoints": [endpoint]},
                "listen": {"endpoints": ["tcp/localhost:0"]},
                "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": True}},
            }
        )
    )
    with zenoh.open(config) as session:
        # As rmw_zenoh's router check: look once a second.
        while not list(session.info.routers_zid()):
            time.sleep(1)
        subscriber = session.declare_subscriber(key)
        print("ready", flush=True)
        sample = subscriber.recv()
        print("heard: " + sample.payload.to_string(), flush=True)


if __name__ == "__main__":
    main()
