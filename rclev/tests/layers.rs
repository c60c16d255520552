//! The library's layering, checked: every folder below `src/` is one layer, each file imports
//! (`crate::…`, `super::…`, `self::…`) only from its own layer or the layers before it, and no
//! files import each other around a loop. The rules and how imports are read:
//! `tools/layers` (the `rclev-layers` crate).
//!
//! | layer | folders |
//! | --- | --- |
//! | 0 | `base/`: the error type, lock aliases, handles, throttling, CDR, the goal and lifecycle state machines, log severities |
//! | 1 | `msg/`, `interfaces/`, `qos/`, `endpoint/` (an entity's name, QoS and delivery options), `parameter/`, `names/` |
//! | 2 | `clock/`, `transport/`, `arguments/` (`--ros-args`), `log_setup/` (logger levels, console output) |
//! | 3 | `runtime/`: the runtime core (mailbox, dispatch, worker loop, fence, alarm, direct delivery, callbacks) |
//! | 4 | `timer/` |
//! | 5 | `executor/` (with the `Context`) |
//! | 6 | `node/`, `logging/` (node loggers, `/rosout`) |
//! | 7 | `action/`, `lifecycle/` |
//! | 8 | `lib.rs` |

/// Layers by folder below `src/`.
pub const LAYERS: &[(&str, u8)] = &[
    ("base/", 0),
    ("msg/", 1),
    ("interfaces/", 1),
    ("qos/", 1),
    ("endpoint/", 1),
    ("parameter/", 1),
    ("names/", 1),
    ("clock/", 2),
    ("transport/", 2),
    ("arguments/", 2),
    ("log_setup/", 2),
    ("runtime/", 3),
    ("timer/", 4),
    ("executor/", 5),
    ("node/", 6),
    ("logging/", 6),
    ("action/", 7),
    ("lifecycle/", 7),
    ("lib.rs", 8),
];

#[test]
fn folders_are_layers_and_no_files_import_each_other_around_a_loop() {
    // Test-only support for the loom models is left out.
    rclev_layers::assert_layered(
        env!("CARGO_MANIFEST_DIR"),
        LAYERS,
        &[
            "loom_model.rs",
            "executor/loom_tests.rs",
            "timer/loom_tests.rs",
        ],
    );
}
