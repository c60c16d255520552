/*
 * The `rcl` variant of `rclev bench pubsub --transport dds`: one role process written against
 * rcl, the C library under rclcpp, rclpy and r2r, with rmw_fastrtps_cpp (Fast DDS 2.14) below
 * it, as ROS 2 Jazzy ships them. rclev compiles this file at run time against the headers and
 * libraries of its ROS 2 venv (rclev-cli/src/bench_dds/rcl.rs) and starts it as it starts its
 * own role processes (`rclev bench-dds-role`), so the harness measures all variants alike.
 *
 * Usage:
 *   rcl_pubsub --role sender|receiver|ping|pong --size BYTES [--hz PINGS_PER_S]
 *   rcl_pubsub --dump-sample BYTES
 *
 * The protocol is the one of rclev-cli/src/bench_dds/roles.rs, which documents it: the process
 * prints `ready` once matched with its peer (sender, ping) or once its subscription exists
 * (receiver, pong), then answers every `mark` line on stdin with one JSON line of counters
 * (the round-trip samples are reset at each mark), and exits on `quit` or at the end of stdin.
 *
 * Every message is a std_msgs/msg/ByteMultiArray with an empty layout whose data starts with a
 * sequence number and the sender's CLOCK_MONOTONIC time in ns, both little-endian uint64, the
 * very payload rclev's roles write. `--dump-sample` prints (binary, on stdout) what rmw
 * serializes for a message of BYTES bytes filled with the check pattern below: the harness
 * compares it with rclev's own encoding of the same message before it runs this variant.
 *
 * Topics, QoS and environment are the other variants': `bench_dds_data` (throughput),
 * `bench_dds_ping` and `bench_dds_pong` (round trip), reliable, KeepLast(10), volatile (ROS's
 * default profile); ROS_DOMAIN_ID and ROS_AUTOMATIC_DISCOVERY_RANGE come from the
 * environment the harness sets, and rcl reads them itself. What is not set is left at what an
 * rclcpp or rclpy user gets: notably rmw_fastrtps's asynchronous publication mode (rclev and
 * the raw engine write synchronously); RMW_FASTRTPS_PUBLICATION_MODE=SYNCHRONOUS in the
 * environment of the benchmark reaches these processes too.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rmw/serialized_message.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <std_msgs/msg/byte_multi_array.h>

/*
 * The type support, as an rclcpp or rclpy program gets it: rosidl_typesupport_c's handle
 * (libstd_msgs__rosidl_typesupport_c.so), which dispatches at run time to the
 * rosidl_typesupport_fastrtps_c library (the (de)serializers rmw_fastrtps uses) and to the
 * introspection one (which rmw_fastrtps needs too, to register the type's XTypes type
 * object: handing it the fastrtps_c handle alone makes rcl_subscription_init fail). The
 * dispatch looks those libraries up on LD_LIBRARY_PATH, which the harness sets to the
 * venv's lib directory, as sourcing a ROS 2 installation does.
 */
#define TYPE_SUPPORT() ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, ByteMultiArray)

/* Payload bytes every message needs: sequence number and send time. */
#define HEADER 16
/* How long a sender or ping waits for its peer to match (as roles.rs). */
#define MATCH_LIMIT_NS (20 * 1000000000ull)
/* How long one rcl_wait may block: the bound on noticing `quit` while nothing arrives. */
#define WAIT_TIMEOUT_NS (100 * 1000000ll)

static const char *const DATA = "bench_dds_data";
static const char *const PING = "bench_dds_ping";
static const char *const PONG = "bench_dds_pong";

enum role { SENDER, RECEIVER, PING_ROLE, PONG_ROLE };

/* The counters a mark reports; written by the thread that takes or publishes, read by the
 * control thread, hence atomics (relaxed: each is a counter on its own). */
static atomic_uint_fast64_t received, payload_bytes, gaps, sent, malformed;
/* The sequence number expected next; only the taking thread touches it. */
static uint64_t next_seq;
/* Set by the control thread on `quit` or at the end of stdin. */
static atomic_bool quitting;

/* Round trips since the last mark, ns; guarded by rtt_lock (the taking thread appends, the
 * control thread sorts and resets). A plain array: at 1 kHz a window holds a few thousand. */
static pthread_mutex_t rtt_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *rtt;
static size_t rtt_len, rtt_cap;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_secs(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

/* Little-endian whatever the host, as roles.rs writes them. */
static void put_u64(uint8_t *at, uint64_t v) {
    for (int i = 0; i < 8; i++) at[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)at[i] << (8 * i);
    return v;
}

static void stamp(uint8_t *payload, uint64_t seq) {
    put_u64(payload, seq);
    put_u64(payload + 8, now_ns());
}

static void die_rcl(const char *what, rcl_ret_t ret) {
    fprintf(stderr, "rcl_pubsub: %s failed (%d): %s\n", what, (int)ret,
            rcl_get_error_string().str);
    exit(1);
}

static void die(const char *what) {
    fprintf(stderr, "rcl_pubsub: %s\n", what);
    exit(1);
}

/* One line on stdout, at once: the harness waits for it. */
static void say(const char *line) {
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

/* A data message arrived (throughput phase): count it and the sequence numbers it skipped. */
static void on_data(const std_msgs__msg__ByteMultiArray *m) {
    if (m->data.size < HEADER) {
        atomic_fetch_add_explicit(&malformed, 1, memory_order_relaxed);
        return;
    }
    uint64_t seq = get_u64(m->data.data);
    if (seq > next_seq)
        atomic_fetch_add_explicit(&gaps, seq - next_seq, memory_order_relaxed);
    next_seq = seq + 1;
    atomic_fetch_add_explicit(&received, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&payload_bytes, m->data.size, memory_order_relaxed);
}

/* An echo arrived (round-trip phase): now minus the send time it carries. */
static void on_pong(const std_msgs__msg__ByteMultiArray *m) {
    if (m->data.size < HEADER) {
        atomic_fetch_add_explicit(&malformed, 1, memory_order_relaxed);
        return;
    }
    uint64_t sent_at = get_u64(m->data.data + 8);
    uint64_t now = now_ns();
    uint64_t d = now > sent_at ? now - sent_at : 1;
    atomic_fetch_add_explicit(&received, 1, memory_order_relaxed);
    pthread_mutex_lock(&rtt_lock);
    if (rtt_len == rtt_cap) {
        size_t cap = rtt_cap ? 2 * rtt_cap : 4096;
        uint64_t *grown = realloc(rtt, cap * sizeof *grown);
        if (!grown) die("out of memory");
        rtt = grown;
        rtt_cap = cap;
    }
    rtt[rtt_len++] = d;
    pthread_mutex_unlock(&rtt_lock);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The value at quantile q of sorted v[0..n): the smallest with at least q·n at or below it. */
static uint64_t quantile(const uint64_t *v, size_t n, double q) {
    if (n == 0) return 0;
    size_t rank = (size_t)ceil(q * (double)n);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return v[rank - 1];
}

/* Answers a mark: the counters as the JSON object roles.rs's `Mark` reads. */
static void mark(void) {
    uint64_t n, p50, p99, max;
    pthread_mutex_lock(&rtt_lock);
    qsort(rtt, rtt_len, sizeof *rtt, cmp_u64);
    n = rtt_len;
    p50 = quantile(rtt, n, 0.5);
    p99 = quantile(rtt, n, 0.99);
    max = n ? rtt[n - 1] : 0;
    rtt_len = 0;
    pthread_mutex_unlock(&rtt_lock);
#define GET(c) ((uint64_t)atomic_load_explicit(&(c), memory_order_relaxed))
    printf("{\"t_ns\":%" PRIu64 ",\"cpu_s\":%.6f,\"received\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"gaps\":%" PRIu64 ",\"sent\":%" PRIu64 ",\"malformed\":%" PRIu64
           ",\"rtt_count\":%" PRIu64 ",\"rtt_p50_ns\":%" PRIu64 ",\"rtt_p99_ns\":%" PRIu64
           ",\"rtt_max_ns\":%" PRIu64 "}\n",
           now_ns(), cpu_secs(), GET(received), GET(payload_bytes), GET(gaps), GET(sent),
           GET(malformed), n, p50, p99, max);
#undef GET
    fflush(stdout);
}

/* The control thread: answers marks until `quit` or the end of stdin, then sets `quitting`. */
static void *control(void *unused) {
    (void)unused;
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (strcmp(line, "mark") == 0) {
            mark();
        } else if (strcmp(line, "quit") == 0) {
            break;
        } else {
            fprintf(stderr, "rcl_pubsub: unknown command \"%s\"\n", line);
            exit(2);
        }
    }
    atomic_store(&quitting, true);
    return NULL;
}

static bool quit_asked(void) { return atomic_load_explicit(&quitting, memory_order_relaxed); }

/* For tear-down calls whose failure changes nothing the harness reads: rcl marks its results
 * warn_unused_result, which a (void) cast does not silence. */
static void ignore(rcl_ret_t r) {
    if (r != RCL_RET_OK) rcl_reset_error();
}

/* A message whose data holds `size` bytes, zeroed. */
static void message_init(std_msgs__msg__ByteMultiArray *m, size_t size) {
    /* rosidl's generated __init sets only members with a default value or of a type of their
     * own: layout.data_offset (a uint32 without one) would keep whatever the stack held, and
     * the --dump-sample check then failed now and then at its byte (8). */
    memset(m, 0, sizeof *m);
    if (!std_msgs__msg__ByteMultiArray__init(m)) die("ByteMultiArray init failed");
    if (!rosidl_runtime_c__octet__Sequence__init(&m->data, size)) die("out of memory");
}

/* Reliable, KeepLast(10), volatile: rmw_qos_profile_default, as ROS's default profile. */
static rmw_qos_profile_t bench_qos(void) {
    rmw_qos_profile_t q = rmw_qos_profile_default;
    q.history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
    q.depth = 10;
    q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
    q.durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
    return q;
}

static rcl_publisher_t make_publisher(rcl_node_t *node, const char *topic) {
    rcl_publisher_t p = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t o = rcl_publisher_get_default_options();
    o.qos = bench_qos();
    rcl_ret_t r = rcl_publisher_init(&p, node, TYPE_SUPPORT(), topic, &o);
    if (r != RCL_RET_OK) die_rcl("rcl_publisher_init", r);
    return p;
}

static rcl_subscription_t make_subscription(rcl_node_t *node, const char *topic) {
    rcl_subscription_t s = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t o = rcl_subscription_get_default_options();
    o.qos = bench_qos();
    rcl_ret_t r = rcl_subscription_init(&s, node, TYPE_SUPPORT(), topic, &o);
    if (r != RCL_RET_OK) die_rcl("rcl_subscription_init", r);
    return s;
}

/* Waits until `pub` (if any) has a subscription and `sub` (if any) a publisher. */
static void wait_matched(const rcl_publisher_t *pub, const rcl_subscription_t *sub) {
    uint64_t deadline = now_ns() + MATCH_LIMIT_NS;
    for (;;) {
        size_t subs = 1, pubs = 1;
        if (pub && rcl_publisher_get_subscription_count(pub, &subs) != RCL_RET_OK) subs = 0;
        if (sub && rcl_subscription_get_publisher_count(sub, &pubs) != RCL_RET_OK) pubs = 0;
        if (subs > 0 && pubs > 0) return;
        if (now_ns() > deadline) die("no peer matched within 20 s");
        struct timespec five_ms = {0, 5 * 1000000};
        nanosleep(&five_ms, NULL);
    }
}

/*
 * What an rcl-based executor does for one subscription: rcl_wait until it has data, then
 * rcl_take until it is empty, calling `handle` for each message; until `quit`. `echo`, if
 * set, publishes every message taken back (the pong).
 */
static void spin(rcl_context_t *context, rcl_subscription_t *sub,
                 void (*handle)(const std_msgs__msg__ByteMultiArray *), rcl_publisher_t *echo) {
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    rcl_ret_t r = rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, context, rcl_get_default_allocator());
    if (r != RCL_RET_OK) die_rcl("rcl_wait_set_init", r);
    std_msgs__msg__ByteMultiArray msg;
    message_init(&msg, 0);
    while (!quit_asked()) {
        if ((r = rcl_wait_set_clear(&ws)) != RCL_RET_OK) die_rcl("rcl_wait_set_clear", r);
        if ((r = rcl_wait_set_add_subscription(&ws, sub, NULL)) != RCL_RET_OK)
            die_rcl("rcl_wait_set_add_subscription", r);
        r = rcl_wait(&ws, WAIT_TIMEOUT_NS);
        if (r == RCL_RET_TIMEOUT) continue;
        if (r != RCL_RET_OK) die_rcl("rcl_wait", r);
        for (;;) {
            rmw_message_info_t info = rmw_get_zero_initialized_message_info();
            r = rcl_take(sub, &msg, &info, NULL);
            if (r == RCL_RET_SUBSCRIPTION_TAKE_FAILED) break;
            if (r != RCL_RET_OK) die_rcl("rcl_take", r);
            if (echo) {
                if (rcl_publish(echo, &msg, NULL) != RCL_RET_OK) {
                    rcl_reset_error();
                    atomic_fetch_add_explicit(&malformed, 1, memory_order_relaxed);
                }
            } else {
                handle(&msg);
            }
        }
    }
    std_msgs__msg__ByteMultiArray__fini(&msg);
    ignore(rcl_wait_set_fini(&ws));
}

/* The ping's sending thread: a stamped message at `hz` on a grid of absolute deadlines. */
struct pinger {
    rcl_publisher_t *pub;
    size_t size;
    double hz;
};

static void sleep_until(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void *ping_thread(void *arg) {
    struct pinger *p = arg;
    /* As roles.rs's pace(): 1 ns timer slack, so the sleeps end on time. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    std_msgs__msg__ByteMultiArray msg;
    message_init(&msg, p->size);
    uint64_t period = (uint64_t)(1e9 / p->hz);
    uint64_t next = now_ns() + period, seq = 0;
    while (!quit_asked()) {
        sleep_until(next);
        stamp(msg.data.data, seq++);
        rcl_ret_t r = rcl_publish(p->pub, &msg, NULL);
        if (r != RCL_RET_OK) die_rcl("rcl_publish", r);
        atomic_fetch_add_explicit(&sent, 1, memory_order_relaxed);
        next += period;
        /* After a stall longer than a period, rejoin the grid rather than send a burst: a
         * burst would measure queueing, not the round trip. */
        uint64_t now = now_ns();
        if (now > next) next = now + period - (now - next) % period;
    }
    std_msgs__msg__ByteMultiArray__fini(&msg);
    return NULL;
}

/* `--dump-sample SIZE`: rmw's serialization of a patterned message, binary, on stdout. */
static int dump_sample(size_t size) {
    std_msgs__msg__ByteMultiArray msg;
    message_init(&msg, size);
    /* The pattern roles.rs's check_pattern() writes too. */
    for (size_t i = 0; i < size; i++) msg.data.data[i] = (uint8_t)((i * 31 + 7) & 0xff);
    rmw_serialized_message_t out = rmw_get_zero_initialized_serialized_message();
    rcutils_allocator_t alloc = rcutils_get_default_allocator();
    if (rmw_serialized_message_init(&out, 0, &alloc) != RMW_RET_OK) die("out of memory");
    rmw_ret_t r = rmw_serialize(&msg, TYPE_SUPPORT(), &out);
    if (r != RMW_RET_OK) die_rcl("rmw_serialize", r);
    if (fwrite(out.buffer, 1, out.buffer_length, stdout) != out.buffer_length) die("short write");
    fflush(stdout);
    ignore(rmw_serialized_message_fini(&out));
    std_msgs__msg__ByteMultiArray__fini(&msg);
    return 0;
}

static void usage(void) {
    die("usage: rcl_pubsub --role sender|receiver|ping|pong --size BYTES [--hz N] | "
        "--dump-sample BYTES");
}

int main(int argc, char **argv) {
    enum role role = SENDER;
    bool have_role = false;
    long long size = -1, dump = -1;
    double hz = 1000.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        i++;
        if (strcmp(a, "--role") == 0) {
            have_role = true;
            if (strcmp(v, "sender") == 0) role = SENDER;
            else if (strcmp(v, "receiver") == 0) role = RECEIVER;
            else if (strcmp(v, "ping") == 0) role = PING_ROLE;
            else if (strcmp(v, "pong") == 0) role = PONG_ROLE;
            else usage();
        } else if (strcmp(a, "--size") == 0) {
            size = atoll(v);
        } else if (strcmp(a, "--hz") == 0) {
            hz = atof(v);
        } else if (strcmp(a, "--dump-sample") == 0) {
            dump = atoll(v);
        } else {
            usage();
        }
    }
    if (dump >= 0) return dump_sample((size_t)dump);
    if (!have_role || size < HEADER || !(hz > 0)) usage();

    rcl_allocator_t alloc = rcl_get_default_allocator();
    rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
    rcl_ret_t r = rcl_init_options_init(&init_options, alloc);
    if (r != RCL_RET_OK) die_rcl("rcl_init_options_init", r);
    rcl_context_t context = rcl_get_zero_initialized_context();
    if ((r = rcl_init(0, NULL, &init_options, &context)) != RCL_RET_OK) die_rcl("rcl_init", r);

    static const char *const names[] = {"bench_sender", "bench_receiver", "bench_ping",
                                        "bench_pong"};
    rcl_node_t node = rcl_get_zero_initialized_node();
    rcl_node_options_t node_options = rcl_node_get_default_options();
    /* No /rosout publisher: the other variants' nodes log nothing on the wire either. */
    node_options.enable_rosout = false;
    if ((r = rcl_node_init(&node, names[role], "", &context, &node_options)) != RCL_RET_OK)
        die_rcl("rcl_node_init", r);

    pthread_t control_thread, sender_thread;
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    bool have_pub = false, have_sub = false;
    switch (role) {
        case RECEIVER:
            sub = make_subscription(&node, DATA);
            have_sub = true;
            say("ready");
            pthread_create(&control_thread, NULL, control, NULL);
            spin(&context, &sub, on_data, NULL);
            break;
        case PONG_ROLE:
            pub = make_publisher(&node, PONG);
            sub = make_subscription(&node, PING);
            have_pub = have_sub = true;
            say("ready");
            pthread_create(&control_thread, NULL, control, NULL);
            spin(&context, &sub, NULL, &pub);
            break;
        case SENDER: {
            pub = make_publisher(&node, DATA);
            have_pub = true;
            wait_matched(&pub, NULL);
            say("ready");
            pthread_create(&control_thread, NULL, control, NULL);
            /* What a C application does: one message, restamped and published again. */
            std_msgs__msg__ByteMultiArray msg;
            message_init(&msg, (size_t)size);
            for (uint64_t seq = 0; !quit_asked(); seq++) {
                stamp(msg.data.data, seq);
                if ((r = rcl_publish(&pub, &msg, NULL)) != RCL_RET_OK) die_rcl("rcl_publish", r);
                atomic_fetch_add_explicit(&sent, 1, memory_order_relaxed);
            }
            std_msgs__msg__ByteMultiArray__fini(&msg);
            break;
        }
        case PING_ROLE: {
            pub = make_publisher(&node, PING);
            sub = make_subscription(&node, PONG);
            have_pub = have_sub = true;
            wait_matched(&pub, &sub);
            say("ready");
            pthread_create(&control_thread, NULL, control, NULL);
            struct pinger p = {&pub, (size_t)size, hz};
            pthread_create(&sender_thread, NULL, ping_thread, &p);
            spin(&context, &sub, on_pong, NULL);
            pthread_join(sender_thread, NULL);
            break;
        }
    }
    pthread_join(control_thread, NULL);

    /* Tear down in order, so that the peer sees the endpoints go (errors here change nothing
     * the harness reads). */
    if (have_sub) ignore(rcl_subscription_fini(&sub, &node));
    if (have_pub) ignore(rcl_publisher_fini(&pub, &node));
    ignore(rcl_node_fini(&node));
    ignore(rcl_shutdown(&context));
    ignore(rcl_context_fini(&context));
    ignore(rcl_init_options_fini(&init_options));
    free(rtt);
    return 0;
}
