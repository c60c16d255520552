//! What a publisher, subscription, service or client is created with, besides its callback:
//! its name and QoS profile ([`PrimitiveOptions`], made from a plain name through
//! [`IntoPrimitiveOptions`]), and for a subscription the thread its callback runs on
//! ([`Delivery`]). QoS itself, policies and events, is `qos/`'s; these options only carry it.

mod delivery;
mod options;

pub use delivery::{AdaptiveDeliveryState, Delivery};
pub use options::{IntoPrimitiveOptions, PrimitiveOptions, DEFAULT_QUEUE_BYTES};
