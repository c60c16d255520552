"""Round trip at 1 kHz, 16 B, with the ping and pong roles of `rclev bench pubsub --transport dds`
on different engines (which side adds latency). A measurement record, not a test.

Run as root, after `cargo build --release -p rclev-cli --features dds`:
    unshare -n sh -c 'ip link set lo up && ROS_DOMAIN_ID=77 \
        ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST python3 rclev-dds/tests/shm/mixed_pairs.py'
"""
import json, os, statistics, subprocess, time

EXE = os.path.join(os.path.dirname(__file__), "../../../target/release/rclev")
COMBOS = [("raw", "raw"), ("rclev-direct", "rclev-direct"),
          ("rclev-direct", "raw"), ("raw", "rclev-direct")]  # (pong, ping)


def role(name, engine):
    return subprocess.Popen([EXE, "bench-dds-role", "--role", name, "--engine", engine,
                             "--size", "16", "--hz", "1000"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def wait_ready(p):
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("a role process died")
        if line.strip() == "ready":
            return


def mark(p):
    p.stdin.write("mark\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


results = {}
for rep in range(3):
    for pong_engine, ping_engine in (COMBOS if rep % 2 == 0 else COMBOS[::-1]):
        pong = role("pong", pong_engine)
        wait_ready(pong)
        ping = role("ping", ping_engine)
        wait_ready(ping)
        time.sleep(1)
        mark(ping)  # drops the warm-up
        time.sleep(3)
        m = mark(ping)
        for p in (ping, pong):
            p.stdin.write("quit\n")
            p.stdin.flush()
            p.wait(timeout=20)
        p50 = m["rtt_p50_ns"] / 1e3
        results.setdefault((pong_engine, ping_engine), []).append(p50)
        print(f"pong={pong_engine:13s} ping={ping_engine:13s} p50={p50:.1f} us", flush=True)
for (pong_engine, ping_engine), v in results.items():
    print(f"pong={pong_engine} ping={ping_engine}: median p50 {statistics.median(v):.1f} us")
