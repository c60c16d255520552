#!/usr/bin/env bash
# Fast DDS version skew on one host: rclev-dds built against Debian bookworm's Fast DDS 2.9.1
# (`libfastrtps-dev`) meets peers on Fast DDS 2.14.5 (rclev-dds's default build from the ROS 2
# Jazzy wheels, and a real rclpy). Fast DDS's shared-memory (SHM) segments of 2.9.1 and 2.14.5
# are not compatible (2.9.1 aborts in Boost.Interprocess when it opens a 2.14.5 port), so rclev
# must use SHM only with the 2.14 line (`SharedMemory::Auto`) and talk UDP otherwise.
#
#   bash rclev-dds/tests/shm/skew.sh           # CI: the crucial pairs; exit 1 if one fails
#   bash rclev-dds/tests/shm/skew.sh --all     # the whole matrix of RESULTS.md (records only)
#
# Run as root (network, mount and PID namespaces). On Debian it installs what it needs:
# libfastrtps-dev/libfastcdr-dev (2.9.1), iproute2, util-linux; the oracle venv
# (`bash .ci/oracles`: Fast DDS 2.14.5 and rclpy). It builds the `chatter` example twice:
# against 2.14.5 (CARGO_TARGET_DIR, default target/) and against 2.9.1 (FASTDDS_PREFIX=/usr,
# SKEW_TARGET_291, default target/skew-291).
#
# Each pair runs in a fresh network namespace (only `lo`) AND a fresh mount namespace with its
# own tmpfs on /dev/shm (SHM segments are not separated by network namespaces: this keeps runs
# from meeting each other or anything else on the host, and leaves nothing behind), and a PID
# namespace (no process outlives its pair).
# ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST. The listener starts, the talker 0.5 s later; after
# SKEW_SECS (5) both get SIGINT; a process still alive 10 s later is a hang (killed).
#
# A pair passes when both processes were alive until SIGINT, exited 0 after it, the listener
# heard at least one message, and no process whose SHM policy is off (2.9.1 with Auto) mapped
# anything from /dev/shm.
#
# Environment: SKEW_SECS (5), SKEW_REPEAT (1), SKEW_OUT (a new /tmp/rclev-skew.* dir),
# SKEW_BIN_214 / SKEW_BIN_291 (use these binaries, no build), SKEW_JOBS (cargo -j),
# SKEW_PYTHON (the oracle venv's python).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
secs="${SKEW_SECS:-5}"

# ---- inside the namespaces: one pair --------------------------------------------------------
# __inner DIR LISTENER_SPEC TALKER_SPEC, a spec being KIND:SHM, KIND 214|291|py, SHM 1|0|auto.
inner() {
    local dir="$1" lspec="$2" tspec="$3"
    mount -t tmpfs -o size=128m,mode=1777 rclev-skew-shm /dev/shm
    ip link set lo up
    set -m # background jobs in their own process groups, SIGINT not ignored
    export ROS_DOMAIN_ID=42 ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
    declare -A pid
    start() { # role spec
        local role="$1" kind="${2%%:*}" shm="${2#*:}" cmd
        case "$kind" in
            214) cmd=("$BIN_214" "$role") ;;
            291) cmd=("$BIN_291" "$role") ;;
            py) cmd=("$PY" "$here/py_chatter.py" "$role") ;;
        esac
        if [[ "$shm" == auto ]]; then
            env -u RCLEV_DDS_SHM "${cmd[@]}" >"$dir/$role.out" 2>"$dir/$role.err" &
        else
            env RCLEV_DDS_SHM="$shm" "${cmd[@]}" >"$dir/$role.out" 2>"$dir/$role.err" &
        fi
        pid[$role]=$!
    }
    start listener "$lspec"
    sleep 0.5
    start talker "$tspec"
    local half
    half=$(awk -v s="$secs" 'BEGIN { print s / 2 }')
    sleep "$half"
    for role in listener talker; do
        # Mappings of files in /dev/shm: the SHM transport in use by that process.
        { grep -c ' /dev/shm/' "/proc/${pid[$role]}/maps" 2>/dev/null || true; } | head -1 >"$dir/$role.shm"
    done
    ls /dev/shm >"$dir/devshm.ls"
    sleep "$half"
    for role in talker listener; do
        if kill -0 "${pid[$role]}" 2>/dev/null; then
            echo alive >"$dir/$role.at_sigint"
            kill -INT "${pid[$role]}"
        else
            echo dead >"$dir/$role.at_sigint"
        fi
    done
    # Up to 10 s to exit after SIGINT; how long each took, in tenths of a second.
    local tick alive
    for tick in $(seq 1 100); do
        alive=0
        for role in talker listener; do
            if [[ ! -f "$dir/$role.exit_ds" ]]; then
                if kill -0 "${pid[$role]}" 2>/dev/null; then
                    alive=1
                else
                    echo "$tick" >"$dir/$role.exit_ds"
                fi
            fi
        done
        ((alive)) || break
        sleep 0.1
    done
    for role in talker listener; do
        if kill -0 "${pid[$role]}" 2>/dev/null; then
            echo killed >"$dir/$role.hang"
            kill -KILL "${pid[$role]}" 2>/dev/null || true
        fi
        local rc=0
        wait "${pid[$role]}" || rc=$?
        echo "$rc" >"$dir/$role.rc"
    done
    awk '/^Udp:/ && ++n == 2 { print $2 }' /proc/net/snmp >"$dir/udp_in"
}

if [[ "${1:-}" == __inner ]]; then
    shift
    inner "$@"
    exit 0
fi

# ---- set-up ---------------------------------------------------------------------------------
all=0
[[ "${1:-}" == --all ]] && all=1
t0=$SECONDS
if [[ $EUID -ne 0 ]]; then
    echo "skew: run as root (unshare -n -m -p, mount tmpfs)" >&2
    exit 2
fi
need=()
dpkg -s libfastrtps-dev >/dev/null 2>&1 || need+=(libfastrtps-dev libfastcdr-dev)
command -v ip >/dev/null || need+=(iproute2)
command -v unshare >/dev/null || need+=(util-linux)
if ((${#need[@]})); then
    echo "skew: apt-get install ${need[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi
# The oracle venv (Fast DDS 2.14.5 for the default build, rclpy), unless all is given.
venv="${RCLEV_ORACLE_VENV:-$repo/target/oracle-venv}"
if [[ -z "${SKEW_BIN_214:-}" || -z "${SKEW_BIN_291:-}" || -z "${SKEW_PYTHON:-}" ]]; then
    venv="$(bash "$repo/.ci/oracles")"
fi
PY="${SKEW_PYTHON:-$venv/bin/python}"
out="${SKEW_OUT:-$(mktemp -d /tmp/rclev-skew.XXXXXX)}"
mkdir -p "$out"
jobs=()
[[ -n "${SKEW_JOBS:-}" ]] && jobs=(-j "$SKEW_JOBS")

if [[ -z "${SKEW_BIN_214:-}" ]]; then
    echo "skew: building chatter against Fast DDS 2.14.5 (the oracle venv)" >&2
    (cd "$repo" && env -u FASTDDS_PREFIX RCLEV_ORACLE_VENV="$venv" \
        cargo build "${jobs[@]}" -q -p rclev-dds --example chatter)
    cp "${CARGO_TARGET_DIR:-$repo/target}/debug/examples/chatter" "$out/chatter-214"
    SKEW_BIN_214="$out/chatter-214"
fi
if [[ -z "${SKEW_BIN_291:-}" ]]; then
    t291="${SKEW_TARGET_291:-$repo/target/skew-291}"
    echo "skew: building chatter against Fast DDS 2.9.1 (FASTDDS_PREFIX=/usr)" >&2
    src="$repo" # the shim guards what 2.12 added (RESULTS.md, "Build against 2.9.1")
    (cd "$src" && FASTDDS_PREFIX=/usr RCLEV_ORACLE_VENV="$venv" CARGO_TARGET_DIR="$t291" \
        cargo build "${jobs[@]}" -q -p rclev-dds --example chatter)
    cp "$t291/debug/examples/chatter" "$out/chatter-291"
    SKEW_BIN_291="$out/chatter-291"
fi
# (Not `ldd | grep -q`: with pipefail, grep's early exit can fail the pipeline with SIGPIPE.)
[[ "$(ldd "$SKEW_BIN_291")" == *"libfastrtps.so.2.9 "* ]] || { echo "skew: $SKEW_BIN_291 does not link Fast DDS 2.9" >&2; exit 2; }
[[ "$(ldd "$SKEW_BIN_214")" == *"libfastrtps.so.2.14 "* ]] || { echo "skew: $SKEW_BIN_214 does not link Fast DDS 2.14" >&2; exit 2; }
export BIN_214="$SKEW_BIN_214" BIN_291="$SKEW_BIN_291" PY SKEW_SECS="$secs"
build_s=$((SECONDS - t0))

# ---- the pairs ------------------------------------------------------------------------------
failed=0
status_of() { # dir role -> ok | ok-slow-exit (> 2 s after SIGINT) | died-early(rc) | exit-crash(rc) | hang(killed)
    local d="$1" r="$2" rc at
    rc="$(cat "$d/$r.rc" 2>/dev/null || echo '?')"
    at="$(cat "$d/$r.at_sigint" 2>/dev/null || echo '?')"
    if [[ -f "$d/$r.hang" ]]; then
        echo "hang(killed)"
    elif [[ "$at" != alive ]]; then
        echo "died-early($rc)"
    elif [[ "$rc" != 0 ]]; then
        echo "exit-crash($rc)"
    elif (($(cat "$d/$r.exit_ds" 2>/dev/null || echo 0) > 20)); then
        echo "ok-slow-exit"
    else
        echo ok
    fi
}

# pair NAME LISTENER_SPEC TALKER_SPEC EXPECT (flow: checked; record: reported only)
pair() {
    local name="$1" l="$2" t="$3" expect="$4" d
    d="$out/$name"
    rm -rf "$d" && mkdir -p "$d"
    timeout -k 5 $((secs + 25)) unshare -n -m -p -f --mount-proc --propagation private -- bash "$here/skew.sh" __inner "$d" "$l" "$t" || true
    local ls ts heard published shm_l shm_t udp verdict
    ls="$(status_of "$d" listener)"
    ts="$(status_of "$d" talker)"
    heard="$(grep -c "I heard" "$d/listener.out" 2>/dev/null || true)"
    published="$(grep -c "Publishing" "$d/talker.out" 2>/dev/null || true)"
    shm_l="$(cat "$d/listener.shm" 2>/dev/null || echo '?')"
    shm_t="$(cat "$d/talker.shm" 2>/dev/null || echo '?')"
    udp="$(cat "$d/udp_in" 2>/dev/null || echo '?')"
    verdict=recorded
    if [[ "$expect" == flow ]]; then
        verdict=PASS
        [[ "$ls" == ok* && "$ts" == ok* ]] || verdict=FAIL
        [[ "${heard:-0}" -gt 0 ]] || verdict=FAIL
        # Auto on 2.9.1 means no SHM: the process must map nothing from /dev/shm.
        [[ "$l" == 291:auto && "$shm_l" != 0 ]] && verdict=FAIL
        [[ "$t" == 291:auto && "$shm_t" != 0 ]] && verdict=FAIL
        [[ "$verdict" == FAIL ]] && failed=1
    fi
    local ex_l ex_t
    ex_l="$(awk '{ printf "%.1f", $1 / 10 }' "$d/listener.exit_ds" 2>/dev/null || echo '?')"
    ex_t="$(awk '{ printf "%.1f", $1 / 10 }' "$d/talker.exit_ds" 2>/dev/null || echo '?')"
    printf '%-28s %-9s %-9s %-16s %-16s %5s %5s %6s %3s/%-3s %4s/%-4s %s\n' \
        "$name" "$l" "$t" "$ls" "$ts" "$published" "$heard" "$udp" "$shm_l" "$shm_t" "$ex_l" "$ex_t" "$verdict" | tee -a "$out/summary.txt"
    if [[ "$ls $ts" == *crash* || "$ls $ts" == *early* || "$ls $ts" == *hang* ]]; then
        for r in listener talker; do
            [[ -s "$d/$r.err" ]] && sed -n '1,3s/^/    '"$r"' stderr: /p' "$d/$r.err" | cut -c1-220 | tee -a "$out/summary.txt"
        done
    fi
    return 0
}

printf '%-28s %-9s %-9s %-16s %-16s %5s %5s %6s %-7s %-9s %s\n' \
    pair listener talker "listener" "talker" pub heard udp_in shm_L/T exit_s_L/T verdict | tee "$out/summary.txt"
repeat="${SKEW_REPEAT:-1}"
for i in $(seq 1 "$repeat"); do
    s=""
    ((repeat > 1)) && s=".$i"
    if ((all)); then
        pair "214-214.default$s" 214:auto 214:auto flow
        pair "214to291.shm-both$s" 291:1 214:1 record
        pair "291to214.shm-both$s" 214:1 291:1 record
        pair "214to291.shm-214only$s" 291:auto 214:1 flow
        pair "291to214.shm-214only$s" 214:1 291:auto flow
        pair "214to291.default$s" 291:auto 214:auto flow
        pair "291to214.default$s" 214:auto 291:auto flow
        pair "pyto291.default$s" 291:auto py:auto flow
        pair "291topy.default$s" py:auto 291:auto flow
        pair "pyto291.shm-291$s" 291:1 py:auto record
        pair "291topy.shm-291$s" py:auto 291:1 record
        pair "214to291.shm-291only$s" 291:1 214:0 record
        pair "291-291.shm-both$s" 291:1 291:1 record
    else
        pair "214to291.default$s" 291:auto 214:auto flow
        pair "291to214.default$s" 214:auto 291:auto flow
        pair "pyto291.default$s" 291:auto py:auto flow
        pair "291topy.default$s" py:auto 291:auto flow
    fi
done
echo "skew: build/set-up ${build_s} s, pairs $((SECONDS - t0 - build_s)) s, total $((SECONDS - t0)) s; logs in $out" | tee -a "$out/summary.txt"
if ((failed)); then
    echo "skew: FAILED" >&2
    exit 1
fi
echo "skew: all checked pairs passed"
