//! Fast DDS through rclev's shim with none of rclev's layers: raw CDR bytes on DDS topics,
//! received on Fast DDS's listener thread. For measuring what rclev's layers cost
//! (`rclev bench pubsub --transport dds` runs it side by side with rclev) and for tools
//! that move bytes; nodes should use [`DdsTransport`](crate::DdsTransport).

use std::sync::Arc;

use cxx::UniquePtr;

use rclev::{QoSProfile, Result};

use crate::config::DdsOptions;
use crate::endpoints::{EndpointSpec, ParticipantHandle};
use crate::error::engine_error;
use crate::ffi::bridge::{self, DdsReader, DdsWriter, SampleMeta};
use crate::ffi::{GraphHandler, Guarded, NO_IDENTITY};
use crate::inbox::Fill;
use crate::matched::{Matched, SampleSink};
use crate::qos::to_dds;

/// Ignores discovery (the engine keeps no graph).
struct NoGraph;

impl GraphHandler for NoGraph {
    fn endpoint(&self, _: &bridge::DiscoveredEndpoint) {}
    fn participant(&self, _: &bridge::DiscoveredParticipant) {}
}

/// A DDS participant set up as [`DdsTransport`](crate::DdsTransport)'s is. Its writers and
/// readers may outlive it (they keep the DDS participant alive), and any of them may be
/// dropped anywhere, a reader from inside its own callback too: the deletion then waits
/// until the callback has returned.
pub struct Participant {
    handle: ParticipantHandle,
}

/// A DDS writer of raw CDR.
pub struct Writer {
    inner: Guarded<UniquePtr<DdsWriter>>,
    matched: Arc<Matched>,
}

/// A DDS reader whose samples go to a closure on Fast DDS's listener thread.
pub struct Reader {
    _inner: Guarded<UniquePtr<DdsReader>>,
    matched: Arc<Matched>,
}

/// Hands samples to the user's closure.
struct Callback<F>(F);

impl<F: Fn(&[u8]) + Send + Sync> SampleSink for Callback<F> {
    fn sample(&self, data: Vec<u8>, _: &SampleMeta) {
        (self.0)(&data)
    }
}

impl Participant {
    /// A participant with `options` (domain, discovery range, shared memory).
    pub fn new(options: &DdsOptions) -> Result<Self> {
        let config = options.participant_config(&bridge::engine_version());
        let handle = ParticipantHandle::new(&config, Arc::default(), Box::new(NoGraph))?;
        Ok(Self { handle })
    }

    /// A writer on DDS topic `topic` (no ROS prefix added) of DDS type `type_name`, with the
    /// QoS `qos` maps to (resolved as for a publisher).
    pub fn create_writer(&self, topic: &str, type_name: &str, qos: &QoSProfile) -> Result<Writer> {
        let qos = qos.resolve(rclev::qos::QosRole::Publisher, &[]);
        let parts = self.handle.create_writer(
            EndpointSpec {
                topic,
                type_name,
                qos: &to_dds(&qos),
                user_data: &[],
            },
            Arc::new(()),
        )?;
        Ok(Writer {
            inner: parts.writer,
            matched: parts.matched,
        })
    }

    /// A reader on `topic` of `type_name` that calls `on_sample` with each sample's CDR bytes
    /// (encapsulation header included) on Fast DDS's listener thread, as soon as it arrives
    /// (whatever `qos`'s history: the callback is the queue).
    pub fn create_reader(
        &self,
        topic: &str,
        type_name: &str,
        qos: &QoSProfile,
        on_sample: impl Fn(&[u8]) + Send + Sync + 'static,
    ) -> Result<Reader> {
        let qos = qos.resolve(rclev::qos::QosRole::Subscription, &[]);
        let parts = self.handle.create_reader(
            EndpointSpec {
                topic,
                type_name,
                qos: &to_dds(&qos),
                user_data: &[],
            },
            Fill::KeepLast(1).reader_mode(None),
            Arc::new(Callback(on_sample)),
            Arc::new(()),
        )?;
        Ok(Reader {
            _inner: parts.reader,
            matched: parts.matched,
        })
    }
}

impl Writer {
    /// Writes one sample: CDR with its encapsulation header.
    pub fn write(&self, cdr: &[u8]) -> Result<()> {
        self.inner.write(cdr, &NO_IDENTITY).map_err(engine_error)?;
        Ok(())
    }

    /// Readers matched now.
    pub fn matched(&self) -> usize {
        self.matched.count()
    }
}

impl Reader {
    /// Writers matched now.
    pub fn matched(&self) -> usize {
        self.matched.count()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_engine_reports_its_version() {
        assert!(crate::engine_version().starts_with("2."));
    }
}
