//! Running short blocking work (a store write the caller must wait for) from async code.

/// Runs `work` on the current thread and returns its result. On a multi-threaded Tokio runtime
/// the worker's other tasks move to another thread first ([`tokio::task::block_in_place`]),
/// which spares the two thread hand-offs of `spawn_blocking`; on a current-thread runtime, or
/// outside any runtime, `work` simply runs (it is short: the thread is blocked for its length).
pub fn in_place<R>(work: impl FnOnce() -> R) -> R {
    let flavor = tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor());
    if matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::MultiThread)) {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}
