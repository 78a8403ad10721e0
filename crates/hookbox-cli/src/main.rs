//! The `hookbox` command-line program: argument parsing and exit codes only; the work is done
//! by the library crates.

mod allocator;
mod cli;
mod commands;
mod config;
mod render;
mod sdk_mode;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, HooksCommand};
use crate::commands::daemon::client::Handoff;

fn main() -> ExitCode {
    // A warm sandbox's supervisor is hookbox re-executed inside the sandbox: decided first.
    hookbox_exec::supervise_if_asked();
    allocator::limit_arenas();
    // SDK mode (the Python agent SDKs' `cli_path`): decided before clap sees the arguments.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if hookbox_stream_json::is_version_probe(&args) {
        return sdk_mode::print_version();
    }
    if hookbox_stream_json::is_sdk_mode(&args) {
        return sdk_mode::run(&args);
    }
    // `hookbox hook` is handed to the daemon before clap or any runtime is built.
    let mut early_hook = None;
    if args.first().map(String::as_str) == Some("hook") {
        let argv: Vec<_> = std::env::args_os().skip(1).collect();
        match commands::daemon::client::hand_off(&argv) {
            Handoff::Answered(code) => return code,
            Handoff::InProcess {
                stdin,
                daemon_failed,
            } => early_hook = Some((stdin, daemon_failed)),
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // `--help` and `--version` are not errors; every real usage error exits 1.
            let code = if err.use_stderr() { 1 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Check(args) => commands::check::run(&args),
        Command::Credentials { command } => commands::credentials::run(&command),
        Command::Demo(args) => commands::demo::run(&args),
        Command::Env { command } => commands::env::run(&command),
        Command::Exec(args) => commands::exec::run(&args),
        Command::Daemon { command } => commands::daemon::run(&command),
        Command::Hook(args) => {
            let (stdin, daemon_failed) = early_hook.unwrap_or_default();
            Ok(commands::hook::run(args, stdin, daemon_failed.as_deref()))
        }
        Command::Install(args) => commands::install::run(&args),
        Command::Doctor(args) => commands::install::doctor::run(&args),
        Command::Trust(args) => commands::hook::trust(&args),
        Command::Log(args) => commands::log::run(&args),
        Command::Serve(args) => commands::serve::run(&args),
        Command::Mcp(args) => commands::mcp::run(&args),
        Command::ApiKeys { command } => commands::api_keys::run(&command),
        Command::Traces(args) => commands::traces::run(&args),
        Command::Audit { command } => commands::audit::run(&command),
        Command::Hooks {
            command: HooksCommand::Run(args),
        } => commands::hooks_run::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            render::print_error(&render::error_text(&err));
            ExitCode::from(1)
        }
    }
}
