//! Shallow `git clone` of a repository source, through hookbox-exec.

use std::path::Path;
use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec};

/// How long one clone may take.
const CLONE_TIMEOUT: Duration = Duration::from_secs(300);

/// Bytes of git's output kept for error messages.
const OUTPUT_LIMIT: usize = 64 * 1024;

/// Transports git may use; `ext::` (which runs commands) and anything exotic are refused.
const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";

/// Clones `url` (a git URL or local repository path) at `git_ref` (branch or tag; the default
/// branch when `None`) into `dest`, which must not exist. Returns what went wrong as a sentence.
pub(crate) async fn clone(url: &str, git_ref: Option<&str>, dest: &Path) -> Result<(), String> {
    // Built from `shell` and then overridden, so fields hookbox-exec adds keep their defaults.
    let mut spec = ProcessSpec::shell("", CLONE_TIMEOUT);
    spec.program = "git".into();
    spec.args = ["clone", "--quiet", "--depth", "1"]
        .map(Into::into)
        .to_vec();
    if let Some(git_ref) = git_ref {
        spec.args.extend(["--branch".into(), git_ref.into()]);
    }
    spec.args
        .extend(["--".into(), url.into(), dest.as_os_str().to_owned()]);
    spec.env = vec![
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
        ("GIT_ALLOW_PROTOCOL".into(), ALLOWED_PROTOCOLS.into()),
    ];
    spec.output_limit = OUTPUT_LIMIT;
    let output = hookbox_exec::run(&spec)
        .await
        .map_err(|err| format!("{err}; install git, or use an inline or local source"))?;
    match output.exit {
        ExitKind::Exited(0) => Ok(()),
        ExitKind::TimedOut => Err(format!(
            "`git clone {url}` did not finish within {} s",
            CLONE_TIMEOUT.as_secs()
        )),
        ExitKind::Exited(_) | ExitKind::Signaled(_) => Err(format!(
            "`git clone {url}` failed: {}; check the URL{}",
            output.stderr.to_text().trim(),
            if git_ref.is_some() {
                " and that `ref` names a branch or tag"
            } else {
                ""
            }
        )),
    }
}
