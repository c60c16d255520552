"""A Zenoh peer (zenoh-python, `eclipse-zenoh`) announcing many ROS nodes, for rclev-cli's
tests of the graph verbs over Zenoh.

    zenoh_nodes.py [--router] ENDPOINT COUNT [NAME...]

With `--router`, first opens a Zenoh router listening on ENDPOINT, set up as rmw_zenohd's
(admin space readable): zenoh-python is a release build of Zenoh, as rmw_zenohd is, and a
debug build of `rclev zenoh router` on a busy host took minutes over the 5,000 declarations
below (see "Why wait for the router").

Opens a session set up as an rmw_zenoh node's (a peer dialling the router at ENDPOINT,
multicast scouting off, gossip on), waits until a router is connected, declares the node
liveliness tokens rmw_zenoh declares, in the domain of ROS_DOMAIN_ID, for nodes `node_0` …
`node_<COUNT-1>` and for each NAME given (a JSON string, so that any character can be
passed: hostile names are the point), waits until the router holds them all, prints
`declared <n>` and then waits until its standard input closes. The Rust side bounds its run.

Why wait for the router: it takes in a session's token declarations one by one, at a cost
that grows with the tokens it has (Zenoh 1.10.2: 1,000 tokens took it 0.44 s of CPU, 4,000
took 5.6 s; a debug build on a busy host, a minute), and until it has, it is too busy to
introduce this peer to a new session. The tests are of what rclev lists once the system has
settled, not of how fast the router is.
"""

import json
import os
import sys
import time

import zenoh


def mangle(name: str) -> str:
    """rmw_zenoh's mangling of a name inside a key expression: `/` becomes `%`."""
    return name.replace("/", "%")


def open_router(endpoint: str) -> zenoh.Session:
    """A router as rmw_zenohd sets one up: listening on `endpoint`, no multicast scouting, its
    admin space readable (rclev reads which peers it has there)."""
    config = {
        "mode": "router",
        "listen": {"endpoints": [endpoint]},
        "scouting": {"multicast": {"enabled": False}},
        "adminspace": {"enabled": True, "permissions": {"read": True, "write": False}},
    }
    return zenoh.open(zenoh.Config.from_json5(json.dumps(config)))


def main() -> None:
    args = sys.argv[1:]
    with_router = args[:1] == ["--router"]
    if with_router:
        args = args[1:]
    endpoint, count = args[0], int(args[1])
    router = open_router(endpoint) if with_router else None
    names = [json.loads(n) for n in args[2:]]
    domain = int(os.environ.get("ROS_DOMAIN_ID", "0"))
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
        while not list(session.info.routers_zid()):
            time.sleep(1)
        zid = str(session.zid())
        all_names = [f"node_{i}" for i in range(count)] + names
        tokens = [
            session.liveliness().declare_token(
                f"@ros2_lv/{domain}/{zid}/{i}/{i}/NN/%/%/{mangle(name)}"
            )
            for i, name in enumerate(all_names)
        ]
        # A client session sees what the router holds (the router answers a client's query
        # for every token it has; a peer's it leaves to the peers it would meet directly).
        client = zenoh.Config.from_json5(
            json.dumps({"mode": "client", "connect": {"endpoints": [endpoint]}})
        )
        with zenoh.open(client) as via_router:
            ours = f"@ros2_lv/{domain}/{zid}/**"
            while len(list(via_router.liveliness().get(ours, timeout=10.0))) < len(tokens):
                time.sleep(0.1)
        print(f"declared {len(tokens)}", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
