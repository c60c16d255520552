#!/usr/bin/env bash
# What a 2.14.5 talker goes through when a 2.9.1 listener with shared memory forced on
# (RCLEV_DDS_SHM=1, against rclev's policy) aborts beside it (RESULTS.md, "The 2.14.5 side").
#
#   bash rclev-dds/tests/shm/stall.sh CHATTER_291 TALKER_COMMAND...
#   e.g. bash stall.sh target/skew-291/debug/examples/chatter target/debug/examples/chatter talker
#        bash stall.sh target/skew-291/debug/examples/chatter target/oracle-venv/bin/python \
#             rclev-dds/tests/shm/py_chatter.py talker
#
# Prints how many messages the talker has published at t = 2, 4, ... 40 s (10 Hz: a stall shows
# as a flat stretch), then how long it took to exit after SIGINT, and both exit codes
# (the listener's is 134 when it aborted). Own network + mount namespaces, private /dev/shm.
# Needs root; ~45 s.
set -euo pipefail
if [[ "${1:-}" == __inner ]]; then
    shift
    l291="$1"
    shift
    mount -t tmpfs -o size=128m tmpfs /dev/shm
    ip link set lo up
    set -m
    export ROS_DOMAIN_ID=42 ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
    out="$(mktemp -d /tmp/rclev-stall.XXXXXX)"
    RCLEV_DDS_SHM=1 "$l291" listener >"$out/listener.out" 2>"$out/listener.err" &
    l=$!
    sleep 0.5
    "$@" >"$out/talker.out" 2>"$out/talker.err" &
    t=$!
    for s in 2 4 6 8 10 15 20 30 40; do
        while ((SECONDS < s)); do sleep 0.2; done
        echo -n "t=${s}s:$(grep -c Publishing "$out/talker.out" || true) "
    done
    echo
    kill -INT "$t" 2>/dev/null || echo "talker had already exited"
    i=0
    for i in $(seq 1 100); do kill -0 "$t" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$t" 2>/dev/null; then echo "talker still alive 10 s after SIGINT: killed"; kill -KILL "$t"; fi
    rc=0; wait "$t" || rc=$?
    lrc=0; kill -INT "$l" 2>/dev/null || true; wait "$l" || lrc=$?
    echo "talker rc=$rc, exited $(awk -v i="$i" 'BEGIN { printf "%.1f", i / 10 }') s after SIGINT; 2.9.1 listener rc=$lrc; logs in $out"
    exit 0
fi
[[ $# -ge 2 ]] || { echo "usage: $0 CHATTER_291 TALKER_COMMAND..." >&2; exit 2; }
# Relative paths made absolute (not resolved: a venv's python must stay the venv's symlink).
abs() { if [[ "$1" != /* && -e "$1" ]]; then echo "$PWD/$1"; else echo "$1"; fi; }
l291="$(abs "$1")"
shift
args=()
for a in "$@"; do args+=("$(abs "$a")"); done
timeout -k 5 90 unshare -n -m -p -f --mount-proc --propagation private -- bash "$(abs "$0")" __inner "$l291" "${args[@]}"
