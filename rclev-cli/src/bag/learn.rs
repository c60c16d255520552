//! Learning the types rclev does not know from the nodes that publish them, with bounds a
//! hostile peer cannot push: a fixed pool of asker threads fed by a bounded queue (a slow or
//! silent node holds one asker, never the recording), one learnt description per type and
//! hash however many topics use it, and a cap on how many types, and how many bytes of
//! description, a recording leaks into `'static` [`TypeInfo`]s.
//!
//! Threads: the recorder's loop calls every method; the askers only take jobs from `jobs` and
//! send what they learnt on `answers`. Nothing else is shared but `stop` (a plain flag:
//! Relaxed, as nothing is published through it; the queue's closing is what ends them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use rclev::msg::{TypeHash, TypeInfo};
use rclev::transport::{EndpointInfo, NodePort};

use crate::remote_types::{self as types, Asked, Learnt};

/// How many nodes are asked at once. Each ask waits for at most two of
/// [`types::ASK_WAIT`]; a few askers keep one silent node from delaying the other types.
const ASKERS: usize = 4;

/// How many topics may wait for an asker; a topic beyond it is asked at a later look.
const PENDING: usize = 64;

/// At most this many types are learnt per recording: a system has tens to hundreds.
pub(crate) const MAX_TYPES: usize = 1024;

/// At most this many bytes of learnt names and texts (a type's description and sources are
/// a few KiB).
pub(crate) const MAX_BYTES: usize = 16 << 20;

/// A topic whose type must be asked of its publishers' nodes.
struct Ask {
    topic: String,
    type_name: String,
    publishers: Vec<EndpointInfo>,
}

/// What the askers made of an [`Ask`].
struct Answer {
    topic: String,
    type_name: String,
    /// The type, and the node that described it.
    learnt: Asked,
}

/// What became of a topic's type.
pub(crate) enum Outcome {
    /// The type, learnt from node `from` now, or (`from` is `None`) before, for another
    /// topic.
    Learnt {
        /// The type.
        info: TypeInfo,
        /// The node that described it, when it is new.
        from: Option<String>,
    },
    /// No publisher's node described it; worth asking again later.
    Failed(String),
    /// Asking again will not help: the recording has learnt as many types as it may, or
    /// the type is one rclev does not accept (over its `TypeLimits`, malformed).
    Refused(String),
}

/// The askers, and the types learnt so far.
pub(crate) struct Learner {
    /// `None` once dropping: the askers' queue is closed.
    jobs: Option<mpsc::SyncSender<Ask>>,
    answers: mpsc::Receiver<Answer>,
    askers: Vec<std::thread::JoinHandle<()>>,
    /// Set when dropping: the askers skip what is left in the queue.
    stop: Arc<AtomicBool>,
    kept: Kept,
}

/// The types learnt, each leaked once, within limits.
struct Kept {
    types: HashMap<(String, TypeHash), TypeInfo>,
    bytes: usize,
    max_types: usize,
    max_bytes: usize,
}

impl Learner {
    /// Starts the askers, which ask through `node`. Dropping the learner ends them, and
    /// waits for them (see its `Drop`).
    pub(crate) fn new(node: &Arc<dyn NodePort>) -> Self {
        let (jobs, queue) = mpsc::sync_channel::<Ask>(PENDING);
        let (answer_tx, answers) = mpsc::channel();
        let queue = Arc::new(Mutex::new(queue));
        let mut askers = Vec::with_capacity(ASKERS);
        let stop = Arc::new(AtomicBool::new(false));
        for _ in 0..ASKERS {
            let (node, queue, answer_tx) = (node.clone(), queue.clone(), answer_tx.clone());
            let stop = stop.clone();
            askers.push(std::thread::spawn(move || loop {
                // The lock is held only while waiting for a job, never while asking.
                let job = match queue.lock() {
                    Ok(queue) => queue.recv(),
                    Err(_) => return,
                };
                let Ok(job) = job else { return };
                if stop.load(Ordering::Relaxed) {
                    continue;
                }
                let learnt = types::ask_nodes(
                    &node,
                    &job.publishers,
                    &job.type_name,
                    &|| stop.load(Ordering::Relaxed),
                    "the recording ended",
                );
                let answer = Answer {
                    topic: job.topic,
                    type_name: job.type_name,
                    learnt,
                };
                if answer_tx.send(answer).is_err() {
                    return;
                }
            }));
        }
        Self {
            jobs: Some(jobs),
            answers,
            askers,
            stop,
            kept: Kept::new(MAX_TYPES, MAX_BYTES),
        }
    }

    /// The type `type_name` as learnt already for one of `publishers`' hashes.
    pub(crate) fn known(&self, type_name: &str, publishers: &[EndpointInfo]) -> Option<TypeInfo> {
        publishers.iter().find_map(|p| {
            self.kept
                .types
                .get(&(type_name.to_string(), p.type_hash))
                .copied()
        })
    }

    /// Queues `topic` to have its type asked of `publishers`' nodes; false if the queue is
    /// full (ask again later).
    pub(crate) fn ask(
        &self,
        topic: String,
        type_name: String,
        publishers: Vec<EndpointInfo>,
    ) -> bool {
        self.jobs.as_ref().is_some_and(|jobs| {
            jobs.try_send(Ask {
                topic,
                type_name,
                publishers,
            })
            .is_ok()
        })
    }

    /// The next topic whose asking ended, with its type's outcome.
    pub(crate) fn next_answer(&mut self) -> Option<(String, String, Outcome)> {
        let answer = self.answers.try_recv().ok()?;
        let outcome = match answer.learnt {
            Asked::Learnt(learnt, from) => self.kept.keep(&answer.type_name, learnt, from),
            Asked::Refused(why) => Outcome::Refused(why),
            Asked::Failed(why) => Outcome::Failed(why),
        };
        Some((answer.topic, answer.type_name, outcome))
    }
}

impl Drop for Learner {
    /// Closes the queue and waits for the askers: each holds the node, which must be gone
    /// before the process exits (a Fast DDS participant outliving `main` meets Fast DDS's
    /// static destructors: a SIGSEGV at exit, seen on a busy host). What is left in the
    /// queue is skipped; an asker in the middle of an ask ends it within 0.1 s after Ctrl-C,
    /// else within its bounds ([`types::ASK_WAIT`] to be offered, then as much to answer).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.jobs = None;
        for asker in self.askers.drain(..) {
            let _ = asker.join();
        }
    }
}

impl Kept {
    fn new(max_types: usize, max_bytes: usize) -> Self {
        Self {
            types: HashMap::new(),
            bytes: 0,
            max_types,
            max_bytes,
        }
    }

    /// `learnt` (described by node `from`), leaked once per type and hash, within the
    /// limits.
    fn keep(&mut self, type_name: &str, learnt: Learnt, from: String) -> Outcome {
        let key = (type_name.to_string(), learnt.hash());
        if let Some(info) = self.types.get(&key) {
            return Outcome::Learnt {
                info: *info,
                from: None,
            };
        }
        let size = learnt.size();
        if self.types.len() >= self.max_types || self.bytes + size > self.max_bytes {
            return Outcome::Refused(format!(
                "this recording has learnt {} types ({} KiB of descriptions), and learns at \
                 most {} ({} KiB)",
                self.types.len(),
                self.bytes >> 10,
                self.max_types,
                self.max_bytes >> 10
            ));
        }
        match learnt.leak() {
            Ok(info) => {
                self.bytes += size;
                self.types.insert(key, info);
                Outcome::Learnt {
                    info,
                    from: Some(from),
                }
            }
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::sensor_msgs::msg::Image;
    use rclev::interfaces::std_msgs::msg::Header;
    use rclev::msg::Message;

    fn learnt<T: Message>() -> Learnt {
        types::from_answer(
            T::TYPE_NAME,
            T::TYPE_HASH,
            types::answer_describing(&T::TYPE_DESCRIPTION),
        )
        .unwrap()
    }

    #[test]
    fn a_type_is_leaked_once_however_many_topics_use_it() {
        let mut kept = Kept::new(MAX_TYPES, MAX_BYTES);
        let Outcome::Learnt {
            info: first,
            from: Some(from),
        } = kept.keep(Image::TYPE_NAME, learnt::<Image>(), "/camera".into())
        else {
            panic!("Image was not kept");
        };
        assert_eq!(from, "/camera");
        let bytes = kept.bytes;
        assert!(bytes > 0);
        let Outcome::Learnt {
            info: again,
            from: None,
        } = kept.keep(Image::TYPE_NAME, learnt::<Image>(), "/other".into())
        else {
            panic!("Image was not found again");
        };
        // The same leaked description, not a second one.
        assert!(std::ptr::eq(first.type_name, again.type_name));
        assert_eq!((kept.types.len(), kept.bytes), (1, bytes));
    }

    #[test]
    fn types_beyond_the_limits_are_refused_for_good() {
        let mut kept = Kept::new(1, MAX_BYTES);
        assert!(matches!(
            kept.keep(Image::TYPE_NAME, learnt::<Image>(), "/a".into()),
            Outcome::Learnt { .. }
        ));
        let Outcome::Refused(why) = kept.keep(Header::TYPE_NAME, learnt::<Header>(), "/a".into())
        else {
            panic!("a second type was kept beyond a limit of one");
        };
        assert!(why.contains("at most 1 "), "{why}");
        // What was learnt before the limit is still served.
        assert!(matches!(
            kept.keep(Image::TYPE_NAME, learnt::<Image>(), "/a".into()),
            Outcome::Learnt { .. }
        ));

        let size = learnt::<Header>().size();
        let mut kept = Kept::new(MAX_TYPES, size - 1);
        assert!(matches!(
            kept.keep(Header::TYPE_NAME, learnt::<Header>(), "/a".into()),
            Outcome::Refused(_)
        ));
        assert_eq!((kept.types.len(), kept.bytes), (0, 0));
    }
}
