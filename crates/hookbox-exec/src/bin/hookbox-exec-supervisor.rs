//! A program that is only a warm sandbox's supervisor (see `hookbox_exec::WarmSandbox`): what
//! this crate's tests and benchmarks start warm sandboxes with. In production the supervisor
//! is hookbox itself, whose `main` calls `supervise_if_asked` first the same way.

use std::io::Write;

fn main() {
    hookbox_exec::supervise_if_asked();
    let _written = writeln!(
        std::io::stderr(),
        "this program only runs as a warm sandbox's supervisor ({})",
        hookbox_exec::SUPERVISOR_ARG
    );
    std::process::exit(2);
}
