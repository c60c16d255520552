//! A service client for a tool that blocks: it waits, bounded and with Ctrl-C honoured, for a
//! server to be ready and for the response to a request. Below both the dynamic client of
//! `service call` / `action send_goal` ([`crate::service_call::DynamicClient`]) and the typed
//! one that asks nodes to describe types ([`crate::remote_types`]).

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rclev::transport::{ClientPort, NodePort, Payload, ReadyHook, ServiceEndpoint};

use crate::errors::Result;

/// How often waiting for a server looks again (readiness has no wake-up of its own).
const READY_POLL: Duration = Duration::from_millis(20);

/// The longest a wait for a response sleeps before it looks at Ctrl-C again.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// Wakes a waiting client when a response arrives.
struct Ring(mpsc::SyncSender<()>);

impl ReadyHook for Ring {
    fn ready(&self) {
        let _ = self.0.try_send(());
    }
}

/// A client port and what wakes it.
pub struct WaitingClient {
    port: Arc<dyn ClientPort>,
    rung: mpsc::Receiver<()>,
    name: String,
}

impl WaitingClient {
    /// A client of `endpoint` on `node`.
    pub fn new(node: &Arc<dyn NodePort>, endpoint: &ServiceEndpoint) -> Result<Self> {
        let (ring, rung) = mpsc::sync_channel(1);
        let port = node.create_client(endpoint, Arc::new(Ring(ring)))?;
        Ok(Self {
            port,
            rung,
            name: endpoint.name.clone(),
        })
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether a server is ready now.
    pub fn is_ready(&self) -> bool {
        self.port.service_is_ready()
    }

    /// Waits up to `limit` for a server; `false` if none came, or on Ctrl-C (in a command
    /// that [handles it](crate::interrupt)).
    pub fn wait_ready_for(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.port.service_is_ready() {
            if Instant::now() > deadline || crate::interrupt::interrupted() {
                return false;
            }
            std::thread::sleep(READY_POLL);
        }
        true
    }

    /// Sends `request`; its sequence number.
    pub fn send(&self, request: Payload) -> Result<i64> {
        Ok(self.port.send_request(request)?)
    }

    /// The response to any of requests `sequences`, if one comes within `wait` and before
    /// Ctrl-C; responses to other requests are dropped.
    pub fn answer(&self, sequences: &[i64], wait: Duration) -> Result<Option<Payload>> {
        let deadline = Instant::now() + wait;
        loop {
            while let Some((seq, answer)) = self.port.take_response() {
                if sequences.contains(&seq) {
                    return Ok(Some(answer?));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || crate::interrupt::interrupted() {
                return Ok(None);
            }
            let _ = self.rung.recv_timeout(left.min(INTERRUPT_POLL));
        }
    }
}
