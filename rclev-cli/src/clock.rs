//! The benchmarks' own pacing: `CLOCK_MONOTONIC` (the clock `Instant` reads and
//! `clock_nanosleep` paces on; read with [`rclev::clock::monotonic_nanos`]) slept on directly,
//! with 1 ns timer slack ([`rclev::timer::set_thread_timer_slack`]), so that the baselines pay
//! no more for a wake-up than the kernel asks.

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
