//! Conveniences on generated types that the library itself relies on.

use super::builtin_interfaces::msg::Time;
use super::unique_identifier_msgs::msg::UUID;

impl Time {
    /// Nanoseconds since the epoch of the clock the stamp came from.
    pub fn as_nanos(&self) -> i64 {
        self.sec as i64 * 1_000_000_000 + self.nanosec as i64
    }
    /// A stamp from nanoseconds (negative values floor to the previous second).
    pub fn from_nanos(ns: i64) -> Self {
        Self {
            sec: ns.div_euclid(1_000_000_000) as i32,
            nanosec: ns.rem_euclid(1_000_000_000) as u32,
        }
    }
}

impl UUID {
    /// A random (version 4) id.
    pub fn random() -> Self {
        Self {
            uuid: uuid::Uuid::new_v4().into_bytes(),
        }
    }
    /// Whether this is the all-zero id (in a cancel request: "every goal").
    pub fn is_zero(&self) -> bool {
        self.uuid == [0; 16]
    }
}

impl std::fmt::Display for UUID {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", uuid::Uuid::from_bytes(self.uuid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_nanos_round_trip() {
        for ns in [0, 1, 999_999_999, 1_000_000_000, -1, -1_500_000_000] {
            assert_eq!(Time::from_nanos(ns).as_nanos(), ns);
        }
    }
}
