//! A program that is only a warm sandbox's supervisor (see `hookbox_exec::WarmSandbox`): what
//! this crate's tests and benchmarks start warm sandboxes with.

fn main() {
    hookbox_exec::supervise_only()
}
