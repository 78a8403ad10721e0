//! Slash commands: a prompt that is `/NAME` (a letter, then letters, digits, `-`, `_` or `:`),
//! alone or followed by arguments, is a command. hookbox knows `/compact` and `/clear` (with
//! Claude Code's aliases `/reset` and `/new`); any other is answered `Unknown command: /NAME`
//! without reaching the model, as Claude Code does in a non-interactive session. A prompt that
//! starts with a path (`/tmp/x …`) is not a command.

/// The commands the session runs itself (without their slash).
pub(super) const KNOWN: [&str; 4] = ["compact", "clear", "reset", "new"];

/// The command `prompt` is (`/NAME`, with its slash), if it is one, known or not. A command
/// is not a message to the model: interfaces that keep a transcript do not record it as one.
pub fn slash_command(prompt: &str) -> Option<&str> {
    let word = prompt.trim_start().split(char::is_whitespace).next()?;
    let name = word.strip_prefix('/')?;
    let is_command = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'));
    is_command.then_some(word)
}

/// The unknown command `prompt` names (`/NAME`), if it is one; `known` are the commands the
/// session handles itself (without their slash).
pub(super) fn unknown_command<'a>(prompt: &'a str, known: &[&str]) -> Option<&'a str> {
    slash_command(prompt).filter(|word| !known.contains(&&word[1..]))
}

/// Whether `prompt` is `/clear`, `/reset` or `/new` (arguments are ignored, as in Claude
/// Code).
pub(super) fn is_clear(prompt: &str) -> bool {
    matches!(slash_command(prompt), Some("/clear" | "/reset" | "/new"))
}

#[cfg(test)]
mod tests {
    use super::{is_clear, slash_command, unknown_command};

    #[test]
    fn only_command_words_are_commands() {
        assert_eq!(unknown_command("/nosuch", &["compact"]), Some("/nosuch"));
        assert_eq!(
            unknown_command("  /review-pr 12 please", &["compact"]),
            Some("/review-pr")
        );
        assert_eq!(unknown_command("/compact keep names", &["compact"]), None);
        assert_eq!(unknown_command("/tmp/x.txt is broken", &["compact"]), None);
        assert_eq!(unknown_command("/ alone", &["compact"]), None);
        assert_eq!(unknown_command("/1password", &["compact"]), None);
        assert_eq!(unknown_command("list /etc", &["compact"]), None);
    }

    #[test]
    fn clear_is_a_command() {
        assert!(is_clear("/clear"));
        assert!(is_clear("  /clear now"));
        assert!(is_clear("/reset") && is_clear("/new"));
        assert!(!is_clear("/clearly"));
        assert!(!is_clear("please /clear"));
        assert_eq!(slash_command("/compact keep"), Some("/compact"));
        assert_eq!(slash_command("/tmp/x"), None);
    }
}
