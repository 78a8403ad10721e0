//! What a file tool reports when it cannot do what was asked.

use std::io;

use rustix::io::Errno;

/// A failed file-tool call. Its message is what the model and a post hook's `error` field see,
/// so it names the tool, the sandbox path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// No file tool has this name.
    #[error(
        "unknown file tool `{0}`; the file tools are read_file, write_file, list_files and delete_file"
    )]
    UnknownTool(String),
    /// The arguments are missing, of the wrong type or unknown.
    #[error("{tool}: {problem}")]
    InvalidArguments {
        /// The tool called.
        tool: &'static str,
        /// What is wrong with the arguments.
        problem: String,
    },
    /// The path is not usable (empty, NUL byte, climbs above `/`, names no file).
    #[error("{tool}: {problem}")]
    InvalidPath {
        /// The tool called.
        tool: &'static str,
        /// What is wrong with the path.
        problem: String,
    },
    /// Writing or deleting outside the writable locations.
    #[error("{tool}: `{path}` is a read-only location; only {writable} can be modified")]
    ReadOnly {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
        /// The writable locations, for the message.
        writable: &'static str,
    },
    /// The owner wrote into a `.agents` directory that is the model's.
    #[error("{tool}: {problem}")]
    NotTheOwners {
        /// The operation.
        tool: &'static str,
        /// Which directory, why, and what to do instead.
        problem: String,
    },
    /// Nothing exists at the path.
    #[error("{tool}: `{path}` does not exist")]
    NotFound {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
    },
    /// A file is already there and replacing it was not asked for.
    #[error("{tool}: `{path}` already exists; ask to overwrite it or pick another path")]
    AlreadyExists {
        /// The operation.
        tool: &'static str,
        /// The sandbox path.
        path: String,
    },
    /// The path names a directory where a file is needed.
    #[error("{tool}: `{path}` is a directory; {hint}")]
    IsDirectory {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
        /// What to do instead.
        hint: &'static str,
    },
    /// The path names something that is neither a regular file nor a directory as needed.
    #[error("{tool}: `{path}` is not {expected}")]
    WrongType {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
        /// What was needed, e.g. "a regular file".
        expected: &'static str,
    },
    /// The file has other names (hard links), which the hooks judging this path did not see.
    #[error(
        "{tool}: `{path}` is a file with other names too (hard links), and hooks judged only \
         this one; file tools refuse such files: read it through a copy, or remove its other \
         names first"
    )]
    HardLinked {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
    },
    /// The file is larger than the tool returns.
    #[error(
        "{tool}: `{path}` is {size} bytes, more than the {limit}-byte limit; read it in parts \
         with code_execution (e.g. `head -c`)"
    )]
    TooLarge {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A recursive listing reached a directory past the walk limits.
    #[error(
        "{tool}: cannot list `{path}` recursively: {limits}; list the deep part without \
         `recursive`, starting from a directory nearer to it"
    )]
    TooDeep {
        /// The tool called.
        tool: &'static str,
        /// The directory not entered.
        path: String,
        /// The limits, as a sentence.
        limits: String,
    },
    /// The path leaves its writable location through a symlink.
    #[error(
        "{tool}: `{path}` goes through a symbolic link that leads out of `/{area}`; file tools \
         do not follow links out of the writable location, so use the link's target path"
    )]
    LeavesArea {
        /// The tool called.
        tool: &'static str,
        /// The sandbox path.
        path: String,
        /// The writable location, e.g. `workspace`.
        area: String,
    },
    /// The resolved path (shown to the hooks) names something else since: a part of it became
    /// a symbolic link, or was renamed, replaced or exchanged for another file or directory;
    /// nothing was done.
    #[error(
        "{tool}: `{path}` changed while it was being judged (a part of it is now a symbolic \
         link, or another file or directory than the hooks judged); nothing was done; call the \
         tool again"
    )]
    Changed {
        /// The tool called.
        tool: &'static str,
        /// The resolved sandbox path.
        path: String,
    },
    /// The environment's disk budget (bytes or inodes) is used up.
    #[error(
        "{tool}: cannot {action} `{path}`: the environment's disk budget is used up (no space or \
         no inodes left); delete files that are no longer needed, or ask the environment's \
         owner for larger `limits`"
    )]
    DiskFull {
        /// The tool called.
        tool: &'static str,
        /// What was being done.
        action: &'static str,
        /// The sandbox path.
        path: String,
    },
    /// Any other operating-system failure.
    #[error("{tool}: cannot {action} `{path}`: {source}")]
    Io {
        /// The tool called.
        tool: &'static str,
        /// What was being done.
        action: &'static str,
        /// The sandbox path.
        path: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
}

/// Maps an errno from `action` on sandbox path `path` to the error the model should see.
pub(crate) fn from_errno(
    tool: &'static str,
    action: &'static str,
    path: &str,
    errno: Errno,
) -> ToolError {
    let path = path.to_owned();
    match errno {
        Errno::NOENT => ToolError::NotFound { tool, path },
        Errno::NOTDIR => ToolError::WrongType {
            tool,
            path,
            expected: "reachable: one of its parent components is not a directory",
        },
        Errno::LOOP => ToolError::WrongType {
            tool,
            path,
            expected: "reachable: it goes through too many (or disallowed) symbolic links",
        },
        Errno::NOSPC | Errno::DQUOT => ToolError::DiskFull { tool, action, path },
        Errno::NAMETOOLONG => ToolError::InvalidPath {
            tool,
            problem: format!(
                "cannot {action} `{path}`: the path is too long (Linux takes at most 4096 bytes \
                 in all and 255 per name); use a shorter path"
            ),
        },
        source => ToolError::Io {
            tool,
            action,
            path,
            source: source.into(),
        },
    }
}
