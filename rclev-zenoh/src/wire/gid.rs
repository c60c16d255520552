//! GIDs: the 16-byte identity of a node or endpoint, derived from its liveliness token.
//!
//! rmw_zenoh hashes the entity's whole liveliness key expression with XXH3-128 (seed 0) and
//! stores the digest's low 64 bits then its high 64 bits, each in the machine's (little-endian)
//! byte order: the digest as a little-endian `u128`, i.e. the byte-reverse of XXH3-128's
//! canonical (big-endian) form. Every peer can so compute any entity's GID from its token,
//! and the GID in an attachment names the token's entity.
//!
//! Source: rmw_zenoh `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp` (`Entity::Entity`:
//! `simplified_XXH3_128bits` then two `memcpy`s, low then high) at rolling `bfc065f`; the same
//! in the 2025 Jazzy and Kilted lines. `simplified_xxhash3.cpp` is a trimmed copy of the
//! reference XXH3; that it equals stock XXH3-128 was not checked here against a live
//! rmw_zenoh peer, only against a second implementation (the tests say which).

use rclev::transport::Gid;

/// The GID rmw_zenoh gives the entity whose liveliness key expression is `liveliness_keyexpr`.
pub fn gid_of(liveliness_keyexpr: &str) -> Gid {
    let digest = xxhash_rust::xxh3::xxh3_128(liveliness_keyexpr.as_bytes());
    Gid(digest.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors from Python's `xxhash` 3.x package (PyPI `xxhash`, binding libxxhash 0.8.4):
    /// `xxhash.xxh3_128_intdigest(key.encode()).to_bytes(16, "little").hex()`, computed in a
    /// private venv; its `xxh3_128_hexdigest` (canonical form) is the byte-reverse, also
    /// checked below.
    const VECTORS: [(&str, &str, &str); 3] = [
        ("", "7f498d4624c30160d8984701d306aa99", "99aa06d3014798d86001c324468d497f"),
        (
            "@ros2_lv/0/8f4b3c2a1d0e9f8a7b6c5d4e3f2a1b0c/0/10/MP/%/%/talker/%chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18/::,7:,:,:,,",
            "bf5de8151b09e140e9ec8f9b23ebbf14",
            "14bfeb239b8fece940e1091b15e85dbf",
        ),
        (
            "@ros2_lv/0/1a2b/3/3/NN/%/%robot1/talker",
            "ff639ca532505dde22d151d39158b407",
            "07b45891d351d122de5d5032a59c63ff",
        ),
    ];

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn matches_python_xxhash() {
        for (key, gid, canonical) in VECTORS {
            let Gid(bytes) = gid_of(key);
            assert_eq!(hex(&bytes), gid, "{key}");
            let mut reversed = bytes;
            reversed.reverse();
            assert_eq!(hex(&reversed), canonical, "{key}");
        }
    }
}
