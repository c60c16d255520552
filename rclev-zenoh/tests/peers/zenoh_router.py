"""A Zenoh router for rclev-zenoh's interop tests: zenoh-python's (`eclipse-zenoh` 1.10.2,
the same Zenoh runtime zenohd 1.10.2 runs, built in release), so that the tests need no
zenohd build.

    zenoh_router.py ENDPOINT

Opens a session in router mode listening on ENDPOINT, multicast scouting off (as
`zenohd -l ENDPOINT --no-multicast-scouting`), its admin space readable (as rmw_zenohd's
configuration has it), prints `ready` and runs until killed.
"""

import json
import sys
import threading

import zenoh


def main() -> None:
    endpoint = sys.argv[1]
    zenoh.init_log_from_env_or("error")
    config = {
        "mode": "router",
        "listen": {"endpoints": [endpoint]},
        "scouting": {"multicast": {"enabled": False}},
        "adminspace": {"enabled": True, "permissions": {"read": True, "write": False}},
    }
    with zenoh.open(zenoh.Config.from_json5(json.dumps(config))):
        print("ready", flush=True)
        # Until killed (the tests' PeerProcess kills it when dropped).
        threading.Event().wait()


if __name__ == "__main__":
    main()
