//! `hookbox-sandbox-supervisor`: a program that is only a warm sandbox's supervisor, installed
//! next to `hookbox`, which runs it in its warm sandboxes (see
//! `hookbox_exec::supervisor_program`) as their supervisor and as the supervisor's parent: it
//! links nothing but the sandbox, so an idle warm sandbox costs a fraction of the memory a copy
//! of `hookbox` would.

fn main() {
    hookbox_exec::supervise_only()
}
