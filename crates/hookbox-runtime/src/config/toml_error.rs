//! What the TOML parser refuses (bad syntax, a value of the wrong type, an unknown key), said
//! the way every `hookbox.toml` error is: the file with the line, the key, the problem, once.

use std::path::Path;

use super::checks::toml_key;

/// `FILE:LINE: [SECTION] KEY: PROBLEM` for `error`, raised while parsing `text`, the contents
/// of `path` (the parts the parser does not know are left out).
pub(super) fn describe(path: &Path, text: &str, mut error: toml::de::Error) -> anyhow::Error {
    let line = error
        .span()
        .and_then(|span| text.get(..span.start))
        .map(|before| before.matches('\n').count() + 1);
    // Without the input, the parser's text is its message and, when it knows them, the keys
    // (`in `network.resolve``) instead of a drawing of the line.
    error.set_input(None);
    let shown = error.to_string();
    let (message, keys) = match shown.trim_end().rsplit_once("\nin `") {
        Some((message, keys)) => (message, keys.strip_suffix('`')),
        None => (shown.trim_end(), None),
    };
    let message = message.replace('\n', "; ");
    let place = match line {
        Some(line) => format!("{}:{line}", path.display()),
        None => path.display().to_string(),
    };
    match keys {
        Some(keys) => anyhow::anyhow!("{place}: {}: {message}", key_path(keys)),
        None => anyhow::anyhow!("{place}: {message}"),
    }
}

/// The parser's dotted `keys` as the file spells them: `network.resolve.a.example` as
/// `[network] resolve."a.example"`, `agents.a.b.model` as `[agents."a.b"] model`, a section
/// alone as `[network]`. (The parser joins the keys with dots, so the names below `resolve`
/// and `agents`, which may hold dots, are taken whole.)
fn key_path(keys: &str) -> String {
    let Some((section, rest)) = keys.split_once('.') else {
        return format!("[{keys}]");
    };
    match (section, rest.split_once('.')) {
        ("network", Some(("resolve", name))) => format!("[network] resolve.{}", toml_key(name)),
        ("agents", _) => match rest.rsplit_once('.') {
            Some((name, field)) => format!("[agents.{}] {field}", toml_key(name)),
            None => format!("[agents] {}", toml_key(rest)),
        },
        _ => format!("[{section}] {rest}"),
    }
}
