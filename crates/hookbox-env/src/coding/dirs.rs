//! Directories besides the working directory: those added to the session (`--add-dir`), where
//! the tools work as in the working directory (with the same protections), and a path outside
//! all of them that one call was explicitly allowed to reach (a permission prompt's allow).

use std::path::{Path, PathBuf};

use hookbox_exec::Bind;
use serde_json::Value;

use crate::coding::paths::normalise;
use crate::coding::{CodingOutcome, CodingTools, Failure};
use crate::tools::ToolError;

/// The path argument of coding tool `name`: `file_path` of `Read`, `Write`, `Edit`; `path`
/// of `Glob`, `Grep` (`Bash` has none).
fn path_argument<'a>(name: &str, input: &'a Value) -> Option<(&'static str, &'a str)> {
    let field = match name {
        "Read" | "Write" | "Edit" => "file_path",
        "Glob" | "Grep" => "path",
        _ => return None,
    };
    Some((field, input.get(field)?.as_str()?))
}

impl CodingTools {
    /// Adds `dir` (an existing directory) to the session: the file tools work there as in
    /// the working directory (absolute paths), with its `.claude`, `.git`, `.agents` protected
    /// likewise, and `Bash`'s sandbox binds it writable at its own path. A directory already
    /// inside the working directory or an added one changes nothing; one that contains either
    /// is refused (the protections of the inner one would not hold).
    pub fn add_directory(&mut self, dir: &Path) -> Result<(), ToolError> {
        let added = CodingTools::new(dir, self.isolation)?;
        let roots = || std::iter::once(&self.cwd).chain(self.added.iter().map(|tools| &tools.cwd));
        if roots().any(|root| added.cwd.starts_with(root)) {
            return Ok(());
        }
        if let Some(inner) = roots().find(|root| root.starts_with(&added.cwd)) {
            return Err(ToolError::InvalidPath {
                tool: "coding tools",
                problem: format!(
                    "cannot add the directory {}: it contains {}, which the session already \
                     has; add a directory beside it, not above it",
                    added.cwd.display(),
                    inner.display()
                ),
            });
        }
        self.added.push(added);
        Ok(())
    }

    /// The added directories (canonical).
    pub fn added_directories(&self) -> impl Iterator<Item = &Path> {
        self.added.iter().map(|tools| tools.cwd.as_path())
    }

    /// The added directory's tools that hold the absolute path `text`, if one does.
    pub(crate) fn holder(&self, text: &str) -> Option<&CodingTools> {
        if !Path::new(text).is_absolute() {
            return None;
        }
        self.added
            .iter()
            .find(|tools| tools.locate("path", text).is_ok())
    }

    /// The added directory's tools that a call of `name` with `input` works in, if any.
    pub(crate) fn holder_of_call(&self, name: &str, input: &Value) -> Option<&CodingTools> {
        path_argument(name, input).and_then(|(_, text)| self.holder(text))
    }

    /// The path a call of `name` with `input` names outside the working directory and the
    /// added directories (lexically normalised), if it does: such a call runs only through
    /// [`call_outside`](Self::call_outside), once someone allowed it.
    pub fn outside(&self, name: &str, input: &Value) -> Option<PathBuf> {
        let (field, text) = path_argument(name, input)?;
        if text.is_empty() || text.contains('\0') || self.locate(field, text).is_ok() {
            return None;
        }
        if self.holder(text).is_some() {
            return None;
        }
        Some(normalise(&self.cwd.join(text)))
    }

    /// Runs a call whose path lies [`outside`](Self::outside) the session's directories, which
    /// was explicitly allowed: in the directory holding that path (the path itself when `Glob`
    /// or `Grep` name a directory), with the path made absolute. Only file tools; they run on the host.
    pub async fn call_outside(&self, name: &str, input: &Value) -> CodingOutcome {
        let Some((field, path)) = self
            .outside(name, input)
            .and_then(|path| path_argument(name, input).map(|(field, _)| (field, path)))
        else {
            return self.call(name, input).await;
        };
        // `Glob` and `Grep` search a directory (or `Grep` one file: its directory holds it).
        let dir = if field == "path" && path.is_dir() {
            path.as_path()
        } else {
            path.parent().unwrap_or(Path::new("/"))
        };
        let granted = match CodingTools::new(dir, self.isolation) {
            Ok(granted) => granted,
            Err(error) => return CodingOutcome::failed(format!("{name}: {error}")),
        };
        let mut input = input.clone();
        input[field] = Value::String(path.display().to_string());
        granted.call(name, &input).await
    }

    /// `Bash`'s binds for the added directories: each writable at its own path, then what
    /// protects its `.claude`, `.git`, `.agents` (see [`protected`](Self::protected)).
    pub(crate) fn added_binds(&self) -> Result<Vec<Bind>, Failure> {
        let mut binds = Vec::new();
        for added in &self.added {
            binds.push(Bind {
                host: added.cwd.clone(),
                target: added.cwd.clone(),
                writable: true,
            });
            binds.extend(added.protection_binds()?);
        }
        Ok(binds)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::Isolation;

    #[tokio::test]
    async fn added_directories_and_allowed_outside_paths() {
        let cwd = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let mut tools = CodingTools::new(cwd.path(), Isolation::Unsandboxed).unwrap();
        let note = other.path().join("note.txt");
        let write = |path: &Path| json!({"file_path": path, "content": "hi"});

        // Outside everything: the tools refuse it, `outside` names it.
        assert_eq!(
            tools.outside("Write", &write(&note)),
            Some(normalise(&note))
        );
        let refused = tools.call("Write", &write(&note)).await;
        assert!(refused.error.is_some(), "{refused:?}");
        assert!(!note.exists());

        // Added: the tools work there, and its protected entries are protected.
        tools.add_directory(other.path()).unwrap();
        assert_eq!(tools.outside("Write", &write(&note)), None);
        let written = tools.call("Write", &write(&note)).await;
        assert_eq!(written.error, None, "{written:?}");
        assert_eq!(std::fs::read_to_string(&note).unwrap(), "hi");
        let settings = other.path().join(".claude/settings.json");
        assert!(tools.protected(&settings.display().to_string()).is_some());
        // A file protected there is protected in its directory, with what lies beneath it.
        let server = other.path().join("mcp/server");
        assert!(
            tools
                .protected(&server.join("s.py").display().to_string())
                .is_none()
        );
        tools.protect_files([server.clone()]);
        assert!(
            tools
                .protected(&server.join("s.py").display().to_string())
                .is_some()
        );
        // Relative paths stay in the working directory.
        assert_eq!(
            tools.outside("Read", &json!({"file_path": "note.txt"})),
            None
        );

        // Nested directories: inside is a no-op, above is refused.
        tools.add_directory(&other.path().join(".")).unwrap();
        assert_eq!(tools.added_directories().count(), 1);
        let parent = cwd.path().parent().unwrap();
        assert!(tools.add_directory(parent).is_err());

        // An allowed outside call runs in the directory holding its path.
        let far = elsewhere.path().join("far.txt");
        let ran = tools.call_outside("Write", &write(&far)).await;
        assert_eq!(ran.error, None, "{ran:?}");
        assert_eq!(std::fs::read_to_string(&far).unwrap(), "hi");
        let read = tools.call_outside("Read", &json!({"file_path": far})).await;
        assert!(read.text.contains("hi"), "{read:?}");
    }
}
