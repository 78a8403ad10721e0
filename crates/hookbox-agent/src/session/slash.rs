//! Slash commands the session does not know: a prompt that is `/NAME` (a letter, then
//! letters, digits, `-`, `_` or `:`), alone or followed by arguments, is a command. hookbox
//! knows `/compact`; any other is answered `Unknown command: /NAME` without reaching the model,
//! as Claude Code does in a non-interactive session. A prompt that starts with a path
//! (`/tmp/x …`) is not a command.

/// The unknown command `prompt` names (`/NAME`), if it is one; `known` are the commands the
/// session handles itself (without their slash).
pub(super) fn unknown_command<'a>(prompt: &'a str, known: &[&str]) -> Option<&'a str> {
    let prompt = prompt.trim_start();
    let word = prompt.split(char::is_whitespace).next()?;
    let name = word.strip_prefix('/')?;
    let is_command = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'));
    (is_command && !known.contains(&name)).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::unknown_command;

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
}
