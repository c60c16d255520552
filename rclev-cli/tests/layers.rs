//! The CLI's layering, checked as the library's is: every file (and the `bench_dds/`,
//! `bench_timers/`, `bench_bag/` and `bag/` folders, one layer each) imports only from its own layer
//! or the ones before it, and no files import each other around a loop. The rules: `tools/layers`.
//!
//! | layer | modules |
//! | --- | --- |
//! | 0 | leaves: `errors`, `clock`, `report`, `interrupt`, `bundled` (the vendored definitions), `wire` (the transport RMW_IMPLEMENTATION names), `graph`, `installed_types`, `demo`, `waiting_client` (a service client that blocks, bounded, with Ctrl-C honoured) |
//! | 1 | `type_names`, `lifecycle`, `param`, `remote_types` (types learnt from nodes' `~/get_type_description`), `zenoh_router`, the benchmarks (`bench_timers`, `bench_pubsub`, `bench_dds`, `simtime`) |
//! | 2 | `interface`, `topic` |
//! | 3 | `service_call`, `topic_stats`, `bench_bag` (its publisher and subscriber are `topic`'s endpoints; its processes `bench_dds`'s) |
//! | 4 | `action_goal`, `bag/` (`bag record|play|info`: `topic`'s endpoints, `remote_types`' asking of `get_type_description`, `installed_types`' schema parser) |
//! | 5 | `main.rs` |

const LAYERS: &[(&str, u8)] = &[
    ("errors.rs", 0),
    ("clock.rs", 0),
    ("report.rs", 0),
    ("interrupt.rs", 0),
    ("bundled.rs", 0),
    ("graph.rs", 0),
    ("installed_types.rs", 0),
    ("demo.rs", 0),
    ("wire.rs", 0),
    ("waiting_client.rs", 0),
    ("zenoh_router.rs", 1),
    ("type_names.rs", 1),
    ("lifecycle.rs", 1),
    ("param.rs", 1),
    ("remote_types.rs", 1),
    ("bench_timers.rs", 1),
    ("bench_timers/", 1),
    ("bench_pubsub.rs", 1),
    ("bench_dds.rs", 1),
    ("bench_dds/", 1),
    ("simtime.rs", 1),
    ("interface.rs", 2),
    ("topic.rs", 2),
    ("service_call.rs", 3),
    ("topic_stats.rs", 3),
    ("bench_bag.rs", 3),
    ("bench_bag/", 3),
    ("action_goal.rs", 4),
    ("bag/", 4),
    ("main.rs", 5),
];

#[test]
fn modules_import_only_downward_and_never_around_a_loop() {
    rclev_layers::assert_layered(env!("CARGO_MANIFEST_DIR"), LAYERS, &[]);
}
