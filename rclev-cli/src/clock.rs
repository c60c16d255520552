//! The benchmarks' own pacing: `CLOCK_MONOTONIC` (the clock `Instant` reads and
//! `clock_nanosleep` paces on; read with [`rclev::clock::monotonic_nanos`]) slept on directly,
//! with 1 ns timer slack, so that the baselines pay no more for a wake-up than the kernel asks.

/// Sleeps until `CLOCK_MONOTONIC` reaches `ns` (an absolute deadline: no time passes between
/// computing a delay and sleeping), through interruptions.
pub fn sleep_until_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// Sets the calling thread's timer slack to 1 ns, as rclev's scheduler does (the default
/// 50 µs lets the kernel batch wake-ups).
pub fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and only affects the calling thread.
    unsafe {
        libc::prctl(
            libc::PR_SET_TIMERSLACK,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}
