//! `write_file {path, content, encoding?}` → `{path, bytes_written}`.

use std::fs::File;
use std::io::Write as _;

use crate::Vocabulary;
use base64::prelude::{BASE64_STANDARD, Engine as _};
use std::os::fd::OwnedFd;

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;
use serde_json::{Value, json};

use crate::confined;
use crate::tools::args::Args;
use crate::tools::definition::{Effect, FileTool, Run, ToolDefinition, sandbox_path_schema};
use crate::tools::error::ToolError;
use crate::tools::files::{FileTools, Writable, sandbox_path};
use crate::tools::resolve::{Final, Identity, Judged};

/// The tool's name.
pub(crate) const TOOL: &str = "write_file";

/// Its arguments.
pub(crate) const ARGS: &[&str] = &["path", "content", "encoding"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sandbox,
    effect: Effect::Edits,
    description: "Create or replace a file under /workspace.",
    parameters,
    arguments: ARGS,
    run: Run::File(FileTool {
        path_names: "the file to write",
        default_path: None,
        last: Final::Keep,
        run,
    }),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = sandbox_path_schema();
    json!({"type": "object", "properties": {
        "path": path,
        "content": {"type": "string"},
        "encoding": {"type": "string", "enum": ["base64"], "description": "Set when content is base64."}
    }, "required": ["path", "content"]})
}

/// Writes a file through a temporary file renamed over the target, creating missing parent
/// directories; an existing file keeps its permission bits. The name written is the one the
/// path named when judged: in the directory judged, still at the judged path once the new file
/// is in place, replacing the entry judged (or none if there was none); otherwise the old
/// entry is put back and the call fails as changed.
pub(crate) fn run(tools: &FileTools, args: &Value, judged: &Judged) -> Result<Value, ToolError> {
    let args = Args::new(TOOL, args, ARGS)?;
    let path = sandbox_path(TOOL, args.required_string("path", "the file to write")?)?;
    let content = args.required_string("content", "the file's new content")?;
    let bytes = match args.string("encoding", "\"base64\" or absent")? {
        None => content.as_bytes().to_vec(),
        Some("base64") => {
            BASE64_STANDARD
                .decode(content)
                .map_err(|err| ToolError::InvalidArguments {
                    tool: TOOL,
                    problem: format!("`content` is not valid base64 ({err})"),
                })?
        }
        Some(other) => {
            return Err(ToolError::InvalidArguments {
                tool: TOOL,
                problem: format!(
                    "unknown encoding `{other}`; use \"base64\" or omit `encoding` for text"
                ),
            });
        }
    };
    let target = tools.writable(TOOL, &path)?;
    let parent = judged_parent(tools, &target, judged)?;
    // Again on the directory actually opened: a link swapped in meanwhile changes nothing.
    tools.refuse_protected(TOOL, &target, &parent, Some(target.name))?;
    let mode = match confined::entry(&parent, target.name) {
        Ok(Some(stat)) if confined::kind(&stat) == FileType::Directory => {
            return Err(ToolError::IsDirectory {
                tool: TOOL,
                path: path.to_string(),
                hint: "write to a file path inside it",
            });
        }
        Ok(Some(stat)) if confined::kind(&stat) == FileType::RegularFile => stat.st_mode & 0o777,
        Ok(_) => 0o644,
        Err(errno) => return Err(target.error(TOOL, "inspect", errno)),
    };
    let depth = path.components().len();
    tools.still_judged(TOOL, &path, depth - 1, &parent, judged)?;
    let unchanged = |replaced: Option<Identity>| {
        replaced == judged.at(depth)
            && tools
                .still_judged(TOOL, &path, depth - 1, &parent, judged)
                .is_ok()
    };
    replace_named(
        &Replacement {
            tool: TOOL,
            name: target.name,
            shown: &path.to_string(),
            error: &|action, errno| target.error(TOOL, action, errno),
            unchanged: &unchanged,
        },
        &parent,
        &mut bytes.as_slice(),
        Mode::from_raw_mode(mode),
    )?;
    Ok(json!({ "path": path.to_string(), "bytes_written": bytes.len() }))
}

/// The parent directory of `target`, the one the hooks judged: the deepest directory of its
/// path that existed then is opened and checked to be the judged one at its place
/// ([`FileTools::still_judged`]), and the missing ones are made below it (mode 0755) through
/// descriptors, so none is made in a directory exchanged in since.
fn judged_parent(
    tools: &FileTools,
    target: &Writable<'_>,
    judged: &Judged,
) -> Result<OwnedFd, ToolError> {
    let components = target.path.components();
    let depth = components.len() - 1;
    let existing = judged.existing().min(depth);
    let failed = |errno| target.error(TOOL, "create the parent directories of", errno);
    let mut dir = tools
        .root()
        .open_exact(
            &confined::relative(&components[..existing]),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(failed)?;
    tools.still_judged(TOOL, target.path, existing, &dir, judged)?;
    for name in &components[existing..depth] {
        match fs::mkdirat(&dir, name.as_str(), confined::dir_mode()) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(errno) => return Err(failed(errno)),
        }
        dir = fs::openat2(
            &dir,
            name.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )
        .map_err(failed)?;
    }
    Ok(dir)
}

/// Writes what `content` yields to a new temporary file in `parent` and renames it over the
/// target; returns how many bytes were written.
pub(crate) fn replace(
    tool: &'static str,
    parent: &impl std::os::fd::AsFd,
    target: &Writable<'_>,
    content: &mut dyn std::io::Read,
    mode: Mode,
) -> Result<u64, ToolError> {
    replace_named(
        &Replacement {
            tool,
            name: target.name,
            shown: &target.path.to_string(),
            error: &|action, errno| target.error(tool, action, errno),
            unchanged: &|_| true,
        },
        parent,
        content,
        mode,
    )
}

/// What [`replace_named`] replaces, and how it reports failures.
pub(crate) struct Replacement<'a> {
    /// The tool called.
    pub(crate) tool: &'static str,
    /// The final component, in the parent directory.
    pub(crate) name: &'a str,
    /// The path as the caller shows it.
    pub(crate) shown: &'a str,
    /// The error for an errno from an action on the path.
    pub(crate) error: &'a dyn Fn(&'static str, rustix::io::Errno) -> ToolError,
    /// Whether the target is still what the caller judged, once the new file is in place,
    /// given the identity of the entry it replaced (`None`: there was none); when not, the
    /// old entry is put back and the write fails as changed.
    pub(crate) unchanged: &'a dyn Fn(Option<Identity>) -> bool,
}

/// Writes what `content` yields to a new temporary file in `parent` and puts it at
/// `target.name` (see [`install`]: an existing symlink there is replaced, never followed, and
/// the name always holds a complete file); returns how many bytes were written.
pub(crate) fn replace_named(
    target: &Replacement<'_>,
    parent: &impl std::os::fd::AsFd,
    content: &mut dyn std::io::Read,
    mode: Mode,
) -> Result<u64, ToolError> {
    let tool = target.tool;
    let temp = format!(
        ".hookbox-write-{}",
        hookbox_store::random_token().map_err(|source| ToolError::Io {
            tool,
            action: "name a temporary file for",
            path: target.shown.to_owned(),
            source,
        })?
    );
    let fd = fs::openat(
        parent,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|errno| (target.error)("create a temporary file for", errno))?;
    let written = fs::fchmod(&fd, mode)
        .map_err(|errno| (target.error)("set the mode of", errno))
        .and_then(|()| {
            let mut file = File::from(fd);
            std::io::copy(content, &mut file)
                .and_then(|count| file.flush().map(|()| count))
                .map_err(|source| match Errno::from_io_error(&source) {
                    Some(errno) => (target.error)("write", errno),
                    None => ToolError::Io {
                        tool,
                        action: "write",
                        path: target.shown.to_owned(),
                        source,
                    },
                })
        })
        .and_then(
            |count| match install(parent, &temp, target.name, target.unchanged) {
                Ok(true) => Ok(count),
                Ok(false) => Err(ToolError::Changed {
                    tool,
                    path: target.shown.to_owned(),
                }),
                Err(errno) => Err((target.error)("replace", errno)),
            },
        );
    if written.is_err() {
        // Best effort: the error being reported matters more than a leftover temporary file.
        let _ = fs::unlinkat(parent, temp.as_str(), AtFlags::empty());
    }
    written
}

/// Puts the complete file `temp` at `name`, both in `parent`, replacing what is there.
///
/// An existing entry is swapped with `temp` in one step (`renameat2(RENAME_EXCHANGE)`), so
/// `name` always names a complete file, old or new, and the old one, now at `temp`, is then
/// unlinked. Neither name is followed if it is a symlink (a symlink at `name` is replaced,
/// like by a rename). This is also what keeps an overwrite cheap on ext4: a rename *over* an
/// existing file makes ext4 start writing the new data out first (`auto_da_alloc`, about
/// 0.3 ms for 4 KiB), an exchange does not. A directory at `name` is swapped back and refused
/// (`EISDIR`, as a rename would). Where nothing is at `name` yet, or the file system cannot
/// exchange (`EINVAL`), it is a plain rename.
///
/// With the new file in place, `unchanged` is asked about the entry it replaced; when it says
/// no, the old entry is put back (our file is at `temp` again, for the caller to remove) and
/// the answer is `Ok(false)`.
fn install(
    parent: &impl std::os::fd::AsFd,
    temp: &str,
    name: &str,
    unchanged: &dyn Fn(Option<Identity>) -> bool,
) -> Result<bool, Errno> {
    match fs::renameat_with(parent, temp, parent, name, RenameFlags::EXCHANGE) {
        Ok(()) => {
            let old = fs::statat(parent, temp, AtFlags::SYMLINK_NOFOLLOW)?;
            // unlink(2) would refuse a directory (EISDIR on Linux): put it back (the caller
            // removes our file, at `temp` again) and refuse it.
            let is_dir = FileType::from_raw_mode(old.st_mode) == FileType::Directory;
            if is_dir || !unchanged(Some(Identity::from_stat(&old))) {
                fs::renameat_with(parent, temp, parent, name, RenameFlags::EXCHANGE)?;
                return if is_dir { Err(Errno::ISDIR) } else { Ok(false) };
            }
            // Best effort: the new content is in place, which is what was asked.
            let _ = fs::unlinkat(parent, temp, AtFlags::empty());
            Ok(true)
        }
        Err(Errno::NOENT | Errno::INVAL) => {
            fs::renameat(parent, temp, parent, name)?;
            if unchanged(None) {
                return Ok(true);
            }
            fs::renameat(parent, name, parent, temp)?;
            Ok(false)
        }
        Err(errno) => Err(errno),
    }
}
