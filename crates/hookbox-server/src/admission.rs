//! Which connections the server takes. A connection is *unauthenticated* until a request on it
//! passes authentication ([`Ticket::promote`]); unauthenticated connections are bounded per peer
//! address and in all, below `max_connections`, so a quarter of the connections stay for clients
//! with a key. When the unauthenticated ones fill their share (or every connection is taken), a
//! new connection pushes out the oldest unauthenticated one: a client that sends its key with
//! its headers is promoted within moments, a half-sent request never is, so clients without a
//! key cannot keep clients with one out.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::connections::Limits;

/// The connections open, as [`Admission`] counts them.
#[derive(Default)]
struct Open {
    /// Every connection open.
    total: usize,
    /// The unauthenticated ones, oldest first, each with its eviction signal.
    unauthenticated: BTreeMap<u64, Unauthenticated>,
    /// How many unauthenticated connections each peer address has.
    per_peer: HashMap<IpAddr, usize>,
    /// The next connection's number.
    next: u64,
}

/// A connection that has not authenticated yet.
struct Unauthenticated {
    peer: IpAddr,
    /// Sending on it closes the connection.
    evict: oneshot::Sender<()>,
}

impl Open {
    /// Forgets `id` as unauthenticated, if it was: its entry, with its eviction signal.
    fn forget(&mut self, id: u64) -> Option<Unauthenticated> {
        let gone = self.unauthenticated.remove(&id)?;
        if let Some(count) = self.per_peer.get_mut(&gone.peer) {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&gone.peer);
            }
        }
        Some(gone)
    }
}

/// Why a connection was not taken; its 503's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The peer address has its share of unauthenticated connections open.
    Peer { cap: usize },
    /// Every connection is taken by authenticated clients.
    Full { cap: usize },
}

impl Refusal {
    /// What the client is told.
    pub(crate) fn message(self) -> String {
        match self {
            Self::Peer { cap } => format!(
                "this address has {cap} connections open that have not presented an API key, \
                 its limit; send the key with every request, or retry shortly"
            ),
            Self::Full { cap } => {
                format!("the server has {cap} connections open, its limit; retry shortly")
            }
        }
    }
}

/// Counts connections and decides which are taken.
pub(crate) struct Admission {
    max_connections: usize,
    max_unauthenticated: usize,
    per_peer: usize,
    open: Mutex<Open>,
}

impl Admission {
    /// Admission under `limits`: unauthenticated connections may take all but a quarter of
    /// `max_connections`, at most `max_unauthenticated_per_peer` from one address.
    pub(crate) fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            max_connections: limits.max_connections,
            max_unauthenticated: limits.max_connections - limits.max_connections / 4,
            per_peer: limits.max_unauthenticated_per_peer,
            open: Mutex::default(),
        })
    }

    /// Takes a new connection from `peer`, unauthenticated: its ticket, and a signal that fires
    /// when a newer connection pushes it out. Refused when `peer` has its share open, or when
    /// every connection is authenticated.
    pub(crate) fn admit(
        self: &Arc<Self>,
        peer: IpAddr,
    ) -> Result<(Arc<Ticket>, oneshot::Receiver<()>), Refusal> {
        let peer = peer.to_canonical();
        let mut open = self.lock();
        if open.per_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer {
            return Err(Refusal::Peer { cap: self.per_peer });
        }
        if open.total >= self.max_connections
            || open.unauthenticated.len() >= self.max_unauthenticated
        {
            // The pushed-out connection stays counted in `total` until its task ends.
            let oldest = open.unauthenticated.keys().next().copied();
            let Some(oldest) = oldest.and_then(|id| open.forget(id)) else {
                return Err(Refusal::Full {
                    cap: self.max_connections,
                });
            };
            let _ = oldest.evict.send(());
        }
        let id = open.next;
        open.next += 1;
        open.total += 1;
        *open.per_peer.entry(peer).or_default() += 1;
        let (evict, evicted) = oneshot::channel();
        open.unauthenticated
            .insert(id, Unauthenticated { peer, evict });
        drop(open);
        let ticket = Ticket {
            admission: Arc::clone(self),
            id,
        };
        Ok((Arc::new(ticket), evicted))
    }

    /// The counts, whatever a panicking holder left.
    fn lock(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One admitted connection; it is counted until the ticket is dropped.
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
}

impl Ticket {
    /// Marks the connection authenticated: it no longer counts against its peer's or the
    /// unauthenticated share, and is never pushed out.
    pub(crate) fn promote(&self) {
        // Dropping the eviction signal's sender disarms it.
        self.admission.lock().forget(self.id);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.admission.lock();
        open.forget(self.id);
        open.total -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a scenario: a connection from an address (`Ok` with its eviction signal, or
    /// the refusal expected), a promotion or a close of connection number `n` (in arrival order).
    enum Step {
        Admit(u8, Option<Refusal>),
        Promote(usize),
        Close(usize),
        /// Which admitted connections have been pushed out so far.
        Evicted(&'static [usize]),
    }

    /// 4 connections, 3 of them unauthenticated, 2 per address.
    fn limits() -> Limits {
        Limits {
            max_connections: 4,
            max_unauthenticated_per_peer: 2,
            ..Limits::default()
        }
    }

    #[test]
    fn admission_follows_its_rules() {
        use Step::*;
        let peer = Some(Refusal::Peer { cap: 2 });
        let full = Some(Refusal::Full { cap: 4 });
        #[rustfmt::skip]
        let scenarios: &[(&str, &[Step])] = &[
            ("an address's share", &[Admit(1, None), Admit(1, None), Admit(1, peer), Admit(2, None)]),
            ("a promoted connection frees its address's share", &[Admit(1, None), Admit(1, None), Promote(0), Admit(1, None)]),
            ("a closed one too", &[Admit(1, None), Admit(1, None), Close(0), Admit(1, None)]),
            ("the oldest unauthenticated is pushed out", &[Admit(1, None), Admit(2, None), Admit(3, None), Evicted(&[]), Admit(4, None), Evicted(&[0])]),
            ("promoted ones never are", &[Admit(1, None), Promote(0), Admit(2, None), Admit(3, None), Admit(4, None), Admit(5, None), Evicted(&[1])]),
            ("all promoted: 503", &[Admit(1, None), Admit(2, None), Admit(3, None), Promote(0), Promote(1), Promote(2), Admit(4, None), Promote(3), Admit(5, full)]),
            ("a refusal for the address comes before pushing out", &[Admit(1, None), Admit(1, None), Admit(2, None), Admit(1, peer), Evicted(&[])]),
        ];
        for (name, steps) in scenarios {
            let admission = Admission::new(&limits());
            let mut open: Vec<Option<(Arc<Ticket>, oneshot::Receiver<()>)>> = Vec::new();
            for (index, step) in steps.iter().enumerate() {
                let at = format!("{name}, step {index}");
                match step {
                    Admit(last, expected) => {
                        let result = admission.admit(IpAddr::from([127, 0, 0, *last]));
                        match (result, expected) {
                            (Ok(admitted), None) => open.push(Some(admitted)),
                            (Err(refusal), Some(expected)) => {
                                assert_eq!(refusal, *expected, "{at}")
                            }
                            (Ok(_), Some(expected)) => panic!("{at}: admitted, not {expected:?}"),
                            (Err(refusal), None) => panic!("{at}: refused: {refusal:?}"),
                        }
                    }
                    Promote(n) => open[*n].as_ref().expect("open").0.promote(),
                    Close(n) => open[*n] = None,
                    Evicted(expected) => {
                        let evicted: Vec<usize> = open
                            .iter_mut()
                            .enumerate()
                            .filter_map(|(n, slot)| {
                                let (_, signal) = slot.as_mut()?;
                                (signal.try_recv() == Ok(())).then_some(n)
                            })
                            .collect();
                        assert_eq!(evicted, *expected, "{at}");
                    }
                }
            }
        }
    }
}
