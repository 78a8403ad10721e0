//! Which connections the server takes. A connection is *unauthenticated* until a request on it
//! passes authentication ([`Ticket::promote`]). A new connection is always taken unless every
//! connection is authenticated: when its address already has its share of unauthenticated
//! connections, the address's oldest is pushed out; when the unauthenticated ones fill theirs
//! (all but a quarter of `max_connections`, the reserve of clients with a key) or every
//! connection is open, the oldest of the address holding the most is. A connection whose
//! request headers are in is not pushed out while its key is checked ([`Ticket::checking`]).
//! So clients without a key cannot keep a client with one out, from however many addresses
//! or from its own: it is never refused for what other connections do, its connection is never
//! the one pushed out while a flooding address holds more, and once its headers are in it is
//! past the point of being pushed out.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::connections::Limits;

/// A connection's standing.
enum Standing {
    /// Waiting for a request's headers; may be pushed out by sending on `evict`.
    Waiting {
        peer: Peer,
        evict: oneshot::Sender<()>,
    },
    /// Its request's headers are in and its key is being checked; it keeps `evict` in case the
    /// check fails and it waits again.
    Checking {
        peer: Peer,
        evict: oneshot::Sender<()>,
    },
    /// It has presented a valid key.
    Authenticated,
}

/// Where connections come from, as the per-address share counts them: an IPv4 address, or an
/// IPv6 /64 (one host usually holds a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Peer {
    V4(u32),
    /// The address's first four segments.
    V6([u16; 4]),
}

impl Peer {
    fn of(address: IpAddr) -> Self {
        match address.to_canonical() {
            IpAddr::V4(v4) => Self::V4(u32::from(v4)),
            IpAddr::V6(v6) => {
                let [a, b, c, d, ..] = v6.segments();
                Self::V6([a, b, c, d])
            }
        }
    }
}

/// The connections open, as [`Admission`] counts them.
#[derive(Default)]
struct Open {
    /// Every connection open and not pushed out, by number.
    standing: HashMap<u64, Standing>,
    /// The waiting connections of each address, oldest first.
    waiting: HashMap<Peer, BTreeSet<u64>>,
    /// How many are authenticated.
    authenticated: usize,
    /// The next connection's number.
    next: u64,
}

impl Open {
    /// Pushes out waiting connection `id`: it is no longer counted, and its task ends.
    fn evict(&mut self, id: u64) {
        if let Some(Standing::Waiting { peer, evict }) = self.standing.remove(&id) {
            self.unwait(peer, id);
            let _ = evict.send(());
        }
    }

    /// Forgets `id` as a waiting connection of `peer`.
    fn unwait(&mut self, peer: Peer, id: u64) {
        if let Some(ids) = self.waiting.get_mut(&peer) {
            ids.remove(&id);
            if ids.is_empty() {
                self.waiting.remove(&peer);
            }
        }
    }

    /// The oldest waiting connection of the address with the most waiting (of those with
    /// equally many, the one whose oldest is oldest).
    fn oldest_of_the_most(&self) -> Option<u64> {
        self.waiting
            .values()
            .filter_map(|ids| Some((ids.len(), std::cmp::Reverse(*ids.first()?))))
            .max()
            .map(|(_, std::cmp::Reverse(id))| id)
    }
}

/// Why a connection was not taken; its 503's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every connection is taken by authenticated clients (or ones whose key is being checked).
    Full { cap: usize },
}

impl Refusal {
    /// What the client is told.
    pub(crate) fn message(self) -> String {
        match self {
            Self::Full { cap } => {
                format!("the server has {cap} connections open, its limit; retry shortly")
            }
        }
    }
}

/// Counts connections and decides which are taken and which are pushed out.
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

    /// Takes a new connection from `address`, waiting for its headers: its ticket, and a
    /// signal that fires when a newer connection pushes it out. Refused only when every
    /// connection is open and none of them is waiting.
    pub(crate) fn admit(
        self: &Arc<Self>,
        address: IpAddr,
    ) -> Result<(Arc<Ticket>, oneshot::Receiver<()>), Refusal> {
        let peer = Peer::of(address);
        let mut open = self.lock();
        let of_peer = open.waiting.get(&peer).map_or(0, BTreeSet::len);
        let unauthenticated = open.standing.len() - open.authenticated;
        if of_peer >= self.per_peer {
            let oldest = open.waiting.get(&peer).and_then(|ids| ids.first().copied());
            if let Some(id) = oldest {
                open.evict(id);
            }
        } else if unauthenticated >= self.max_unauthenticated
            || open.standing.len() >= self.max_connections
        {
            match open.oldest_of_the_most() {
                Some(id) => open.evict(id),
                None if open.standing.len() >= self.max_connections => {
                    return Err(Refusal::Full {
                        cap: self.max_connections,
                    });
                }
                // Over the share only by connections whose keys are being checked: a moment.
                None => {}
            }
        }
        let id = open.next;
        open.next += 1;
        let (evict, evicted) = oneshot::channel();
        open.standing.insert(id, Standing::Waiting { peer, evict });
        open.waiting.entry(peer).or_default().insert(id);
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

/// One admitted connection; it is counted until the ticket is dropped or it is pushed out.
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
}

impl Ticket {
    /// Marks the connection's request headers in: it is not pushed out until the returned
    /// guard is dropped (its request answered); then, unless it authenticated, it waits again
    /// (with its age).
    pub(crate) fn checking(self: &Arc<Self>) -> Checking {
        let mut open = self.admission.lock();
        match open.standing.remove(&self.id) {
            Some(Standing::Waiting { peer, evict }) => {
                open.unwait(peer, self.id);
                open.standing
                    .insert(self.id, Standing::Checking { peer, evict });
            }
            Some(other) => {
                open.standing.insert(self.id, other);
            }
            None => {}
        }
        Checking(Arc::clone(self))
    }

    /// Marks the connection authenticated: it no longer counts against its address's or the
    /// unauthenticated share, and is never pushed out.
    pub(crate) fn promote(&self) {
        let mut open = self.admission.lock();
        let Some(standing) = open.standing.get_mut(&self.id) else {
            return;
        };
        match std::mem::replace(standing, Standing::Authenticated) {
            // Dropping the eviction signal's sender disarms it.
            Standing::Waiting { peer, .. } => open.unwait(peer, self.id),
            Standing::Checking { .. } => {}
            Standing::Authenticated => return,
        }
        open.authenticated += 1;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.admission.lock();
        match open.standing.remove(&self.id) {
            Some(Standing::Waiting { peer, .. }) => open.unwait(peer, self.id),
            Some(Standing::Authenticated) => open.authenticated -= 1,
            Some(Standing::Checking { .. }) | None => {}
        }
    }
}

/// A request of a connection whose key is being checked ([`Ticket::checking`]).
pub(crate) struct Checking(Arc<Ticket>);

impl Drop for Checking {
    fn drop(&mut self) {
        let id = self.0.id;
        let mut open = self.0.admission.lock();
        match open.standing.remove(&id) {
            Some(Standing::Checking { peer, evict }) => {
                open.standing.insert(id, Standing::Waiting { peer, evict });
                open.waiting.entry(peer).or_default().insert(id);
            }
            Some(other) => {
                open.standing.insert(id, other);
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a scenario: a connection from an address (`Ok`, or the refusal expected),
    /// its request's headers in or its answer, a promotion or a close of connection number `n`
    /// (in arrival order).
    enum Step {
        Admit(&'static str, Option<Refusal>),
        Headers(usize),
        Answered(usize),
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

    /// An admitted connection: its ticket, eviction signal and the guard of a request whose
    /// headers are in.
    type Connection = (Arc<Ticket>, oneshot::Receiver<()>, Option<Checking>);

    #[test]
    fn admission_follows_its_rules() {
        use Step::*;
        let full = Some(Refusal::Full { cap: 4 });
        let (a, b, c, d, e) = (
            "127.0.0.1",
            "127.0.0.2",
            "127.0.0.3",
            "127.0.0.4",
            "127.0.0.5",
        );
        #[rustfmt::skip]
        let scenarios: &[(&str, &[Step])] = &[
            ("an address over its share pushes out its own oldest", &[Admit(a, None), Admit(a, None), Evicted(&[]), Admit(a, None), Evicted(&[0])]),
            ("not another address's", &[Admit(b, None), Admit(a, None), Admit(a, None), Admit(a, None), Evicted(&[1])]),
            ("a promoted connection frees its address's share", &[Admit(a, None), Admit(a, None), Promote(0), Admit(a, None), Evicted(&[])]),
            ("a closed one too", &[Admit(a, None), Admit(a, None), Close(0), Admit(a, None), Evicted(&[])]),
            ("the share full: the oldest of the address with the most goes", &[Admit(b, None), Admit(a, None), Admit(a, None), Evicted(&[]), Admit(c, None), Evicted(&[1])]),
            ("of equally many, the oldest", &[Admit(a, None), Admit(b, None), Admit(c, None), Admit(d, None), Evicted(&[0])]),
            ("promoted ones never go", &[Admit(a, None), Promote(0), Admit(b, None), Admit(c, None), Admit(d, None), Admit(e, None), Evicted(&[1])]),
            ("nor one whose key is being checked", &[Admit(a, None), Headers(0), Admit(b, None), Admit(c, None), Admit(d, None), Evicted(&[1])]),
            ("nor, from its address, its own", &[Admit(a, None), Headers(0), Admit(a, None), Admit(a, None), Evicted(&[]), Admit(a, None), Evicted(&[1])]),
            ("a failed check waits again, with its age", &[Admit(a, None), Headers(0), Admit(b, None), Answered(0), Admit(c, None), Admit(d, None), Evicted(&[0])]),
            ("checked and promoted, it stays", &[Admit(a, None), Headers(0), Promote(0), Answered(0), Admit(b, None), Admit(c, None), Admit(d, None), Admit(e, None), Evicted(&[1])]),
            ("pushed-out ones no longer count", &[Admit(a, None), Admit(a, None), Admit(a, None), Admit(b, None), Promote(3), Admit(c, None), Evicted(&[0]), Admit(d, None), Evicted(&[1])]),
            ("over the share only by checked ones: taken", &[Admit(a, None), Admit(b, None), Admit(c, None), Headers(0), Headers(1), Headers(2), Admit(d, None), Evicted(&[])]),
            ("every connection promoted: 503", &[Admit(a, None), Admit(b, None), Admit(c, None), Promote(0), Promote(1), Promote(2), Admit(d, None), Promote(3), Admit(e, full)]),
            ("every one promoted or checked: 503", &[Admit(a, None), Admit(b, None), Admit(c, None), Promote(0), Headers(1), Headers(2), Admit(d, None), Promote(3), Admit(e, full), Answered(1), Admit(e, None), Evicted(&[1])]),
            ("an IPv6 /64 is one address", &[Admit("2001:db8::1", None), Admit("2001:db8::2:1", None), Admit("2001:db8:0:1::1", None), Admit("2001:db8::3", None), Evicted(&[0])]),
            ("an IPv4-mapped address is the IPv4 one", &[Admit("::ffff:127.0.0.1", None), Admit(a, None), Admit(a, None), Evicted(&[0])]),
        ];
        for (name, steps) in scenarios {
            let admission = Admission::new(&limits());
            let mut open: Vec<Option<Connection>> = Vec::new();
            let connection = |open: &mut Vec<Option<Connection>>, n: usize| {
                open[n].take().expect("an open connection")
            };
            for (index, step) in steps.iter().enumerate() {
                let at = format!("{name}, step {index}");
                match step {
                    Admit(address, expected) => {
                        let result = admission.admit(address.parse().expect("an address"));
                        match (result, expected) {
                            (Ok((ticket, evicted)), None) => {
                                open.push(Some((ticket, evicted, None)))
                            }
                            (Err(refusal), Some(expected)) => {
                                assert_eq!(refusal, *expected, "{at}")
                            }
                            (Ok(_), Some(expected)) => panic!("{at}: admitted, not {expected:?}"),
                            (Err(refusal), None) => panic!("{at}: refused: {refusal:?}"),
                        }
                    }
                    Headers(n) => {
                        let (ticket, evicted, _) = connection(&mut open, *n);
                        let checking = ticket.checking();
                        open[*n] = Some((ticket, evicted, Some(checking)));
                    }
                    Answered(n) => {
                        let (ticket, evicted, _) = connection(&mut open, *n);
                        open[*n] = Some((ticket, evicted, None));
                    }
                    Promote(n) => open[*n].as_ref().expect("open").0.promote(),
                    Close(n) => open[*n] = None,
                    Evicted(expected) => {
                        let evicted: Vec<usize> = open
                            .iter_mut()
                            .enumerate()
                            .filter_map(|(n, slot)| {
                                let (_, signal, _) = slot.as_mut()?;
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
