//! The forwarded `hookbox hook` command line read without building the whole command-line
//! parser: the daemon answers only the plain forms (`hook AGENT` with `--policy`, `--home`,
//! `--config` and `--event`, each once, `--NAME VALUE` or `--NAME=VALUE`, and `--fail-closed` once); anything else (help, a usage
//! error, an unusual spelling) is the client's to parse with clap, so its messages stay clap's.

use std::path::PathBuf;

use clap::ValueEnum;

use crate::cli::{AgentArg, HookArgs};

/// The arguments of `argv` (`hook AGENT …`, the words after `hookbox`) when they are in a
/// plain form that clap reads the same way; `None` otherwise.
pub(super) fn hook_args(argv: &[String]) -> Option<HookArgs> {
    let (first, rest) = argv.split_first()?;
    if first != "hook" {
        return None;
    }
    let mut agent = None;
    let (mut policy, mut home, mut config, mut event) = (None, None, None, None);
    let mut fail_closed = false;
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        if word == "--fail-closed" && !fail_closed {
            fail_closed = true;
            continue;
        }
        let Some(option) = word.strip_prefix("--") else {
            if word.starts_with('-') || agent.is_some() {
                return None;
            }
            agent = Some(AgentArg::from_str(word, false).ok()?);
            continue;
        };
        let (name, value) = match option.split_once('=') {
            Some((name, value)) => (name, value),
            None => (option, words.next()?.as_str()),
        };
        if value.is_empty() || value.starts_with('-') {
            return None;
        }
        let slot = match name {
            "policy" => &mut policy,
            "home" => &mut home,
            "config" => &mut config,
            "event" => &mut event,
            _ => return None,
        };
        if slot.replace(value.to_owned()).is_some() {
            return None;
        }
    }
    Some(HookArgs {
        agent: agent?,
        policy: policy.map(PathBuf::from),
        home: home.map(PathBuf::from),
        config: config.map(PathBuf::from),
        event,
        fail_closed,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_owned()).collect()
    }

    #[test]
    fn plain_forms_are_read_as_clap_reads_them() {
        for words in [
            &["hook", "claude-code"][..],
            &["hook", "gemini-cli", "--policy", "p.json"],
            &["hook", "--policy=/p q.json", "codex", "--config", "c.toml"],
            &["hook", "copilot", "--event", "preToolUse", "--policy", "p"],
            &["hook", "cursor", "--event=beforeShellExecution"],
            &["hook", "claude-code", "--fail-closed", "--policy", "p"],
            &["hook", "claude-code", "--home", "/h", "--fail-closed"],
            &["hook", "codex", "--home=/h q", "--policy", "p"],
        ] {
            let ours = hook_args(&argv(words)).unwrap_or_else(|| panic!("{words:?}"));
            let Ok(Cli {
                command: Command::Hook(clap),
            }) = Cli::try_parse_from(std::iter::once("hookbox").chain(words.iter().copied()))
            else {
                panic!("clap refused {words:?}");
            };
            assert_eq!(format!("{ours:?}"), format!("{clap:?}"), "{words:?}");
        }
    }

    #[test]
    fn everything_else_is_left_to_clap() {
        for words in [
            &["hook"][..],
            &["hook", "--help"],
            &["hook", "claude-code", "-h"],
            &["hook", "claude-code", "--version"],
            &["hook", "claude", "--policy", "p"],
            &["hook", "claude-code", "codex"],
            &["hook", "claude-code", "--policy"],
            &["hook", "claude-code", "--policy", "p", "--policy", "q"],
            &["hook", "claude-code", "--home", "/a", "--home", "/b"],
            &["hook", "claude-code", "--policy", "--config"],
            &["hook", "claude-code", "--policy="],
            &["hook", "claude-code", "--unknown", "x"],
            &["hook", "claude-code", "--", "x"],
            &["hook", "--policy", "p"],
            &["exec", "claude-code"],
        ] {
            assert!(hook_args(&argv(words)).is_none(), "{words:?}");
        }
    }
}
