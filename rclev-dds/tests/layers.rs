//! rclev-dds's layering, checked: every file imports (`crate::…`, `super::…`, `self::…`) only
//! from its own layer or the layers before it, and no files import each other around a loop.
//! The crate is flat, so each file is a layer of its own; the table is the crate doc's
//! (`src/lib.rs`). The rules and how imports are read: `tools/layers`.

const LAYERS: &[(&str, u8)] = &[
    ("cdr.rs", 0),
    ("error.rs", 0),
    ("ffi.rs", 0),
    ("names.rs", 0),
    ("entities.rs", 1),
    ("inbox.rs", 1),
    ("qos.rs", 1),
    ("config.rs", 2),
    ("graph.rs", 2),
    ("matched.rs", 3),
    ("endpoints.rs", 4),
    ("announcer.rs", 5),
    ("engine.rs", 5),
    ("node.rs", 6),
    ("service.rs", 7),
    ("topic.rs", 7),
    ("transport.rs", 8),
    ("lib.rs", 9),
];

#[test]
fn files_import_only_downward_and_never_around_a_loop() {
    rclev_layers::assert_layered(env!("CARGO_MANIFEST_DIR"), LAYERS, &[]);
}
