#!/usr/bin/env bash
# Wake-ups of an idle DDS process, per thread (IDLE.md).
#
#   bash rclev-dds/tests/shm/idle.sh LABEL COMMAND [ARGS...]
#
# Runs COMMAND (alone) in fresh network and PID namespaces (only `lo`; nothing outlives the run)
# with its own tmpfs on /dev/shm,
# ROS_DOMAIN_ID=42 and ROS_AUTOMATIC_DISCOVERY_RANGE=${RANGE:-LOCALHOST} (RANGE=SUBNET also
# turns multicast on for `lo`; other variables, such as RCLEV_DDS_SHM, pass through). After IDLE_WARMUP (3) s it reads every thread's
# voluntary/nonvoluntary context switches and CPU ticks from /proc/PID/task/*/{status,stat,comm},
# again IDLE_SECS (20) s later, and prints one row per thread: switches per second (a voluntary
# switch is the thread blocking, i.e. one wake-up per sleep), CPU ms in the window, and whose
# thread it is: rclev (named rclev-*), fastdds (dds.*: Fast DDS 2.14 names its threads), main
# (the main thread; in rclev programs it runs the spin), other (unnamed threads: Fast DDS 2.9.1
# names none of its own; Python's). Also the UDP datagrams sent and received in the namespace during the window (RTPS
# traffic: the process talks only to itself here). Needs root.
set -euo pipefail

if [[ "${1:-}" == __inner ]]; then
    shift
    label="$1"
    shift
    mount -t tmpfs -o size=128m,mode=1777 rclev-idle-shm /dev/shm
    ip link set lo up
    # SUBNET discovery needs multicast, which `lo` lacks by default.
    if [[ "${RANGE:-LOCALHOST}" == SUBNET ]]; then
        ip link set lo multicast on
        ip route add 224.0.0.0/4 dev lo 2>/dev/null || true
    fi
    export ROS_DOMAIN_ID=42 ROS_AUTOMATIC_DISCOVERY_RANGE="${RANGE:-LOCALHOST}"
    "$@" >/dev/null 2>&1 &
    pid=$!
    warm="${IDLE_WARMUP:-3}" secs="${IDLE_SECS:-20}"
    sleep "$warm"
    snap() { # one line per thread: tid comm vol nonvol ticks
        for t in /proc/"$pid"/task/*; do
            local tid comm vol nv ticks
            tid="${t##*/}"
            comm="$(cat "$t/comm" 2>/dev/null)" || continue
            vol="$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status" 2>/dev/null)" || continue
            nv="$(awk '/^nonvoluntary_ctxt_switches/ { print $2 }' "$t/status" 2>/dev/null)" || continue
            # utime + stime (fields 14, 15; the comm field has no spaces here)
            ticks="$(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null)" || continue
            echo "$tid $comm $vol $nv $ticks"
        done
    }
    udp() { awk '/^Udp:/ && ++n == 2 { print $2, $5 }' /proc/net/snmp; }
    a="$(snap)"
    ua="$(udp)"
    sleep "$secs"
    b="$(snap)"
    ub="$(udp)"
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    main_tid="$pid"
    hz="$(getconf CLK_TCK)"
    echo "== $label: $* (RANGE=${RANGE:-LOCALHOST} RCLEV_DDS_SHM=${RCLEV_DDS_SHM:-unset}), ${secs} s after ${warm} s"
    printf '%-18s %-9s %9s %9s %8s %7s\n' thread owner "vol/s" "nonvol/s" "cpu_ms" "vol"
    join <(echo "$a" | sort -k1,1) <(echo "$b" | sort -k1,1) | awk -v s="$secs" -v main="$main_tid" -v hz="$hz" '
        {
            tid = $1; comm = $2
            vol = $7 - $3; nv = $8 - $4; ms = ($9 - $5) * 1000 / hz
            owner = comm ~ /^rclev/ ? "rclev" : (comm ~ /^dds\./ ? "fastdds" : "other")
            if (tid == main) { comm = comm "(main)"; owner = "main" }
            printf "%-18s %-9s %9.2f %9.2f %8.0f %7d\n", comm, owner, vol / s, nv / s, ms, vol
            tv[owner] += vol; tn[owner] += nv
            all += vol + nv
        }
        END {
            for (o in tv) printf "%-18s %-9s %9.2f %9.2f\n", "total", o, tv[o] / s, tn[o] / s
            printf "%-18s %-9s %9.2f  (all switches / s)\n", "total", "process", all / s
        }'
    read -r ia oa <<<"$ua"
    read -r ib ob <<<"$ub"
    echo "UDP datagrams in the window: in $((ib - ia)), out $((ob - oa))"
    exit 0
fi

[[ $# -ge 2 ]] || { echo "usage: $0 LABEL COMMAND [ARGS...]" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
timeout -k 5 $((${IDLE_WARMUP:-3} + ${IDLE_SECS:-20} + 30)) \
    unshare -n -m -p -f --mount-proc --propagation private -- bash "$here/idle.sh" __inner "$@"
