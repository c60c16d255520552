//! When the graph has caught up with the peers there were when the transport was made: the
//! moment [`GraphCache::settled`] turns true, which the tools wait for before they print the
//! graph.
//!
//! A liveliness query alone does not tell. A peer-mode session's query reaches its router and
//! the peers it is connected to directly; the router answers for its clients but not for its
//! peers, which the session meets directly once the router's gossip has named them. Right
//! after opening it has met none, so its query ends at once without them (measured with a
//! peer holding 5,000 tokens: 0 replies at opening, all 5,000 in 0.39 s half a second later).
//! So the transport first asks each router it is connected to which peer sessions it has (the
//! router's admin space, `@/<zid>/router`, which rmw_zenohd and `rclev zenoh router` let
//! anyone read), waits until it is connected to each directly, and only then queries. Even
//! connected, a peer is not asked until Zenoh has routed the new connection (on a busy host
//! the query was seen to end in 0.14 s with none of a connected peer's 5,000 tokens), so a
//! query after which some named peer is still unheard of is asked again. A peer that never
//! connects directly (one with nothing to listen on) has its tokens forwarded by the router to
//! the liveliness subscriber instead. Each wait is bounded (in all, [`LONGEST`]), and the graph
//! counts as settled when the last ends, whatever happened; a named peer with no token at all
//! costs [`HEAR_WAIT`].
//!
//! The decisions are plain functions of what was seen ([`peer_sessions`], [`Waiting`]); the
//! thread [`spawn`] starts owns the clock and the waiting.

use std::collections::BTreeSet;
use std::sync::{mpsc, Arc, Weak};
use std::time::{Duration, Instant};

use serde::Deserialize;
use zenoh::Wait;

use super::graph::GraphCache;
use super::Shared;
use crate::wire::{graph_subscription_keyexpr, session_tokens_keyexpr};

/// The longest the liveliness query may take (5,000 tokens take a release build 1.5-2 s, a
/// debug build 10-20 s).
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a router may take to say which sessions it has (behind thousands of token
/// declarations it is sending this session, its answer took 1.5 s; on a host loaded five
/// times over, more than 5 s). Only a router that is slow to answer costs it: a router whose
/// admin space cannot be read ends the query at once, without an answer.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(20);
/// After the routers answered, the longest to wait for a direct connection to every peer they
/// named (gossip and the connection take well under half a second on one host).
const CONNECT_WAIT: Duration = Duration::from_secs(2);
/// After the first query, how long a named peer still unheard of is asked again (or waited
/// for, if not connected): a query starts only within it.
const HEAR_WAIT: Duration = Duration::from_secs(3);
/// Between two queries: the time the last one gave Zenoh to route a new connection.
const ASK_AGAIN_AFTER: Duration = Duration::from_millis(100);
/// The longest the initial look takes: the graph is settled by then, whatever happened (the
/// last query starts before [`HEAR_WAIT`] has passed and may take [`QUERY_TIMEOUT`]).
pub(crate) const LONGEST: Duration = ADMIN_TIMEOUT
    .saturating_add(CONNECT_WAIT)
    .saturating_add(QUERY_TIMEOUT)
    .saturating_add(HEAR_WAIT)
    .saturating_add(QUERY_TIMEOUT);
/// How often the waits look again: what they wait for (a connection, a peer's first token)
/// has no event of its own to wake them.
const POLL: Duration = Duration::from_millis(10);
/// A router's answer longer than this is not read (a router with 10,000 sessions answers
/// about 2 MB).
const MAX_ADMIN_ANSWER: usize = 8 << 20;

/// What a router's admin space says of itself (`@/<zid>/router`): only the sessions.
#[derive(Deserialize)]
struct RouterInfo {
    #[serde(default)]
    sessions: Vec<SessionInfo>,
}

/// One session of a router: the Zenoh id at the other end and what it is.
#[derive(Deserialize)]
struct SessionInfo {
    peer: String,
    whatami: String,
}

/// The peer sessions (not clients, not routers) a router's admin answer `json` lists, but
/// `own` (this session): the ones whose tokens the router leaves to them to tell. Only Zenoh
/// ids as Zenoh writes them (at most 32 hex digits) are taken: they go into key expressions.
pub(crate) fn peer_sessions(json: &[u8], own: &str) -> Result<BTreeSet<String>, String> {
    if json.len() > MAX_ADMIN_ANSWER {
        return Err(format!("the answer is {} bytes", json.len()));
    }
    let info: RouterInfo = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let is_zid = |z: &str| (1..=32).contains(&z.len()) && z.bytes().all(|b| b.is_ascii_hexdigit());
    Ok(info
        .sessions
        .into_iter()
        .filter(|s| s.whatami == "peer" && s.peer != own && is_zid(&s.peer))
        .map(|s| s.peer)
        .collect())
}

/// What the initial look at the graph still waits for, given the peers the routers named.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    expected: BTreeSet<String>,
}

impl Waiting {
    /// Waiting for `expected` (the routers' peer sessions).
    pub(crate) fn new(expected: BTreeSet<String>) -> Self {
        Self { expected }
    }

    /// Whether every expected peer is among `connected` (the session's direct peers), so that
    /// the liveliness query reaches them all.
    pub(crate) fn all_connected(&self, connected: &BTreeSet<String>) -> bool {
        self.expected.is_subset(connected)
    }

    /// The expected peers none of whose session's tokens is in the graph (`heard`): to ask
    /// again. Connected is not enough: a query reaches a new connection only once Zenoh has
    /// routed it.
    pub(crate) fn unheard<'a>(&'a self, heard: &'a BTreeSet<String>) -> Vec<&'a str> {
        self.expected
            .difference(heard)
            .map(String::as_str)
            .collect()
    }
}

/// Marks the graph settled when dropped: however the initial look ends (a panic, the transport
/// dropped meanwhile), tools never wait on it past its bounds.
struct SettledOnDrop(Arc<GraphCache>);

impl Drop for SettledOnDrop {
    fn drop(&mut self) {
        self.0.set_settled();
    }
}

/// Starts the initial look at the graph: asks the routers at once (before the graph
/// subscriber is declared, so that their answers do not queue behind the thousands of tokens
/// its interest may bring), then goes on on a thread of its own, which holds the transport
/// only while it asks (a transport dropped meanwhile closes as usual).
pub(super) fn spawn(shared: &Arc<Shared>) -> std::io::Result<()> {
    let weak = Arc::downgrade(shared);
    let settled = SettledOnDrop(shared.graph.clone());
    let started = Instant::now();
    let asked = ask_routers(shared);
    std::thread::Builder::new()
        .name("rclev-zenoh-graph".into())
        .spawn(move || {
            let _settled = settled;
            let expected = asked.peers();
            tracing::debug!(
                target: "rclev_zenoh",
                "the routers name {} peer sessions ({:?})",
                expected.len(),
                started.elapsed()
            );
            look(&weak, Waiting::new(expected), started);
        })
        .map(drop)
}

/// The session's direct peers now, or `None` once the transport is gone.
fn connected(weak: &Weak<Shared>) -> Option<BTreeSet<String>> {
    let shared = weak.upgrade()?;
    Some(
        shared
            .session
            .peers()
            .iter()
            .map(|z| z.to_string())
            .collect(),
    )
}

/// The questions put to the routers: one answer awaited per router.
struct AskedRouters {
    routers: usize,
    /// Each answer with the number of the router that gave it.
    answers: mpsc::Receiver<(usize, BTreeSet<String>)>,
}

impl AskedRouters {
    /// The peer sessions of every router that answered within [`ADMIN_TIMEOUT`] (none when
    /// there is no router, or none answered).
    fn peers(self) -> BTreeSet<String> {
        let by = Instant::now() + ADMIN_TIMEOUT;
        let mut peers = BTreeSet::new();
        // Each router's first answer is the one wanted (only its admin space matches): the
        // queries' ends are not waited for. A router that answers twice counts once, so that
        // it does not stand in for one that has not answered yet.
        let mut answered = BTreeSet::new();
        while answered.len() < self.routers {
            let left = by.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left) {
                Ok((router, found)) => {
                    if answered.insert(router) {
                        peers.extend(found);
                    }
                }
                Err(_) => break,
            }
        }
        peers
    }
}

/// Asks every router the session is connected to which sessions it has (without waiting).
fn ask_routers(shared: &Shared) -> AskedRouters {
    let (answer, answers) = mpsc::channel();
    let mut routers = 0;
    for (number, router) in shared.session.routers().into_iter().enumerate() {
        let own = shared.zid.clone();
        let answer = answer.clone();
        let asked = shared
            .zenoh()
            .get(format!("@/{router}/router"))
            // Longer than the answer is waited for: a router busy sending thousands of tokens
            // finishes its query late, and Zenoh warns of a query that times out.
            .timeout(QUERY_TIMEOUT)
            .callback(move |reply| {
                let Ok(sample) = reply.result() else { return };
                match peer_sessions(&sample.payload().to_bytes(), &own) {
                    Ok(found) => {
                        let _ = answer.send((number, found));
                    }
                    Err(e) => tracing::debug!(
                        target: "rclev_zenoh",
                        "router {router}'s sessions not read: {e}"
                    ),
                }
            })
            .wait();
        match asked {
            Ok(()) => routers += 1,
            Err(e) => tracing::debug!(target: "rclev_zenoh", "router {router} not asked: {e}"),
        }
    }
    AskedRouters { routers, answers }
}

/// The rest of the initial look, once the routers named their peers: a direct connection to
/// each, then liveliness queries until every one is heard of; each wait bounded. `started` is
/// for the log.
fn look(weak: &Weak<Shared>, waiting: Waiting, started: Instant) {
    let Some(graph) = weak.upgrade().map(|s| s.graph.clone()) else {
        return;
    };

    let connect_by = Instant::now() + CONNECT_WAIT;
    loop {
        let Some(now_connected) = connected(weak) else {
            return;
        };
        if waiting.all_connected(&now_connected) || Instant::now() >= connect_by {
            tracing::debug!(
                target: "rclev_zenoh",
                "connected to {} of the {} named peers ({:?})",
                waiting.expected.intersection(&now_connected).count(),
                waiting.expected.len(),
                started.elapsed()
            );
            break;
        }
        std::thread::sleep(POLL);
    }

    // First every token of the domain, then, for a while, those of the named peers still
    // unheard of (a peer with no token in this domain is asked until `hear_by`).
    let Some(domain_id) = weak.upgrade().map(|s| s.domain_id) else {
        return;
    };
    let mut keys = vec![graph_subscription_keyexpr(domain_id)];
    let mut queries = 0;
    let mut hear_by = None;
    loop {
        if !query(weak, &graph, &keys) {
            return;
        }
        queries += 1;
        let heard = graph.zids();
        let unheard = waiting.unheard(&heard);
        tracing::debug!(
            target: "rclev_zenoh",
            "liveliness query {queries} ended: {} sessions heard, {} named peers not ({:?})",
            heard.len(),
            unheard.len(),
            started.elapsed()
        );
        let hear_by = *hear_by.get_or_insert_with(|| Instant::now() + HEAR_WAIT);
        if unheard.is_empty() || Instant::now() + ASK_AGAIN_AFTER >= hear_by {
            return;
        }
        keys = unheard
            .iter()
            .map(|zid| session_tokens_keyexpr(domain_id, zid))
            .collect();
        std::thread::sleep(ASK_AGAIN_AFTER);
    }
}

/// Puts every token matching `keys` into `graph` (one liveliness query per key, all at once,
/// waited for up to [`QUERY_TIMEOUT`] together); `false` if the transport is gone.
fn query(weak: &Weak<Shared>, graph: &Arc<GraphCache>, keys: &[String]) -> bool {
    // Each query's callback is dropped when the query ends: the last one hangs up.
    let (hang_up, ended) = mpsc::channel::<()>();
    {
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        for key in keys {
            let into = graph.clone();
            let hang_up = hang_up.clone();
            let asked = shared
                .zenoh()
                .liveliness()
                .get(key.as_str())
                .timeout(QUERY_TIMEOUT)
                .callback(move |reply| {
                    let _ended_when_dropped = &hang_up;
                    if let Ok(sample) = reply.result() {
                        into.put(sample.key_expr().as_str());
                    }
                })
                .wait();
            if let Err(e) = asked {
                tracing::debug!(target: "rclev_zenoh", "the liveliness query {key} failed: {e}");
            }
        }
    }
    drop(hang_up);
    let _ = ended.recv_timeout(QUERY_TIMEOUT);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(zids: &[&str]) -> BTreeSet<String> {
        zids.iter().map(|z| z.to_string()).collect()
    }

    #[test]
    fn a_routers_peers_are_its_peer_sessions_but_this_one() {
        let json = br#"{"zid":"r","locators":[],"sessions":[
            {"peer":"a1","whatami":"peer","links":[]},
            {"peer":"c1","whatami":"client","links":[]},
            {"peer":"r2","whatami":"router","links":[]},
            {"peer":"ee","whatami":"peer","links":[]}]}"#;
        assert_eq!(peer_sessions(json, "ee").unwrap(), set(&["a1"]));
        // Not a Zenoh id: never put into a key expression.
        let odd =
            br#"{"sessions":[{"peer":"**","whatami":"peer"},{"peer":"ab/cd","whatami":"peer"}]}"#;
        assert_eq!(peer_sessions(odd, "ee").unwrap(), set(&[]));
        assert_eq!(peer_sessions(br#"{"zid":"r"}"#, "ee").unwrap(), set(&[]));
    }

    #[test]
    fn a_malformed_or_huge_answer_names_no_peer() {
        assert!(peer_sessions(b"{\"sessions\": [", "ee").is_err());
        let deep = "[".repeat(1_000_000);
        assert!(peer_sessions(deep.as_bytes(), "ee").is_err());
        let huge = vec![b' '; MAX_ADMIN_ANSWER + 1];
        assert!(peer_sessions(&huge, "ee").is_err());
    }

    #[test]
    fn the_query_waits_for_every_peer_to_be_connected_and_then_to_be_heard_of() {
        let waiting = Waiting::new(set(&["a", "b"]));
        assert!(!waiting.all_connected(&set(&["a"])));
        assert!(waiting.all_connected(&set(&["a", "b", "c"])));
        // Connected is not heard: a query reaches a connection only once Zenoh routes it.
        assert_eq!(waiting.unheard(&set(&["a"])), ["b"]);
        assert!(waiting.unheard(&set(&["a", "b", "c"])).is_empty());
        // Nobody named: nothing to wait for.
        let none = Waiting::default();
        assert!(none.all_connected(&set(&[])) && none.unheard(&set(&[])).is_empty());
    }
}
