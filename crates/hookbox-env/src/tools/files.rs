//! The file tools' entry point: argument dispatch and where a path may be read or written.

use std::os::fd::AsFd;
use std::path::Path;

use crate::Vocabulary;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use serde_json::Value;

use crate::agents::{self, WORKSPACE_AGENTS};
use crate::confined::Confined;
use crate::confined::relative;
use crate::environment::Environment;
use crate::sandbox_path::{AGENTS, SandboxPath, WORKSPACE};
use crate::tools::args::Args;
use crate::tools::definition::{FileTool, Run, ToolDefinition, builtin_tool};
use crate::tools::error::{ToolError, from_errno};
use crate::tools::resolve::{self, Final, Identity, Judged};

/// The built-in file tools of one environment: `read_file`, `write_file`, `list_files` and
/// `delete_file`.
///
/// Paths are sandbox paths (relative ones are relative to `/workspace`). A call is resolved
/// once ([`FileTools::resolve`]: links followed inside the environment root, so a symlink to
/// `/etc/passwd` means the environment's own `/etc/passwd`, never the host's) and then acts on
/// exactly that path ([`FileTools::call_resolved`]): every access starts from one descriptor on
/// the environment root and is opened by the kernel (`openat2`) with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`, writes and deletes only beneath the writable location (`/workspace`,
/// and `/.agents` when the environment allows it). Writes go to a temporary file renamed over
/// the target, so they never write through an existing link.
#[derive(Debug)]
pub struct FileTools {
    root: Confined,
    agents_writable: bool,
    /// Whether `/workspace/.agents` is the owner's and read-only to the model.
    protect_workspace_agents: bool,
}

impl FileTools {
    /// The tools of `environment`; an owner-supplied `/workspace/.agents` is read-only to them
    /// unless the environment sets `agents_writable`.
    pub fn for_environment(environment: &Environment) -> Result<Self, ToolError> {
        let mut tools = Self::open(environment.root(), environment.agents_writable())?;
        tools.protect_workspace_agents = environment
            .protected_agents_dirs()
            .iter()
            .any(|dir| dir == "/workspace/.agents");
        Ok(tools)
    }

    /// The tools over the environment root `root` (a host directory hookbox owns).
    pub fn open(root: &Path, agents_writable: bool) -> Result<Self, ToolError> {
        let root = Confined::in_root(root).map_err(|errno| ToolError::Io {
            tool: "file tools",
            action: "open the environment root",
            path: "/".to_owned(),
            source: errno.into(),
        })?;
        Ok(Self {
            root,
            agents_writable,
            protect_workspace_agents: false,
        })
    }

    /// Runs tool `name` with JSON `args` and returns its JSON result: [`FileTools::resolve`],
    /// then [`FileTools::call_resolved`].
    pub fn call(&self, name: &str, args: &Value) -> Result<Value, ToolError> {
        let resolved = self.resolve(name, args)?;
        self.call_resolved(name, &resolved)
    }

    /// `args` of tool `name`, checked, with `path` replaced by the canonical absolute sandbox
    /// path the tool will act on (`list_files` without a path gets `/workspace`): `.` and `..`
    /// taken lexically, then every symbolic link inside the environment root followed (the
    /// last component too for `read_file` and `list_files`; `write_file` and `delete_file` act
    /// on a link itself), what does not exist yet kept as written. This is what hooks are shown.
    /// A write or delete whose path a link leads out of its writable location is refused here.
    /// What the path named then is kept with the arguments, for the tool to act on only that.
    pub fn resolve(&self, name: &str, args: &Value) -> Result<Resolved, ToolError> {
        let (definition, file) = file_tool(name)?;
        let (tool, last, what) = (definition.name, file.last, file.path_names);
        let checked = Args::new(tool, args, definition.arguments)?;
        let text = match (checked.string("path", what)?, file.default_path) {
            (Some(text), _) | (None, Some(text)) => text,
            (None, None) => checked.required_string("path", what)?,
        };
        let path = sandbox_path(tool, text)?;
        self.check_workspace_prefix(tool, text, &path)?;
        let (resolved, judged) = resolve::resolve(&self.root, &path, last)
            .map_err(|errno| from_errno(tool, "resolve", &path.to_string(), errno))?;
        let top = path.top().unwrap_or_default();
        if last == Final::Keep && self.is_writable(top) && resolved.top() != path.top() {
            return Err(ToolError::LeavesArea {
                tool,
                path: path.to_string(),
                area: top.to_owned(),
            });
        }
        let mut resolved_args = args.as_object().cloned().unwrap_or_default();
        resolved_args.insert("path".to_owned(), resolved.to_string().into());
        Ok(Resolved {
            args: Value::Object(resolved_args),
            judged,
        })
    }

    /// The one rule for `workspace/` paths. The Files API names files from the sandbox root
    /// (`workspace/notes.txt`) while a relative tool path is relative to `/workspace`, so a
    /// relative path whose first component is `workspace` means `/workspace/workspace/…`.
    /// When `/workspace/workspace` does not exist that is almost surely not what was meant:
    /// an error naming the absolute path that probably was. (With such a directory, the path
    /// means what it says.)
    fn check_workspace_prefix(
        &self,
        tool: &'static str,
        text: &str,
        path: &SandboxPath,
    ) -> Result<(), ToolError> {
        let components = path.components();
        let doubled = !text.starts_with('/')
            && components.len() >= 2
            && components[0] == WORKSPACE
            && components[1] == WORKSPACE;
        if !doubled {
            return Ok(());
        }
        let nested = format!("{WORKSPACE}/{WORKSPACE}");
        match self.root.open(&nested, OFlags::PATH, Mode::empty()) {
            Ok(_) => Ok(()),
            Err(Errno::NOENT | Errno::NOTDIR) => {
                let meant = SandboxPath::from_components(components[1..].to_vec());
                Err(ToolError::InvalidPath {
                    tool,
                    problem: format!(
                        "path `{text}` is relative to /workspace, so it means {path}, and                          /workspace has no `workspace` directory; you probably meant {meant}                          (the Files API names files from the sandbox root, so its                          `workspace/…` is /workspace/…): pass {meant}"
                    ),
                })
            }
            Err(errno) => Err(from_errno(tool, "inspect", "/workspace/workspace", errno)),
        }
    }

    /// Runs tool `name` with `args` as [`FileTools::resolve`] returned them: the path is
    /// opened exactly as given, refusing every symbolic link (`..` and `.` are still taken
    /// lexically), so a component turned into a link since the resolution makes the call fail
    /// ([`ToolError::Changed`]) instead of being followed; so does one exchanged for another
    /// file or directory ([`FileTools::still_judged`]).
    pub fn call_resolved(&self, name: &str, resolved: &Resolved) -> Result<Value, ToolError> {
        let (_, file) = file_tool(name)?;
        (file.run)(self, &resolved.args, &resolved.judged)
    }

    /// Fails the call as changed ([`ToolError::Changed`]) unless `fd`, opened on the first
    /// `depth` components of `path`, is what they named when the hooks judged `path`, and they
    /// still name it. For a component created since (a new parent directory), the deepest one
    /// that existed must still be the judged one at its place.
    pub(crate) fn still_judged(
        &self,
        tool: &'static str,
        path: &SandboxPath,
        depth: usize,
        fd: &impl AsFd,
        judged: &Judged,
    ) -> Result<(), ToolError> {
        let shown = path.to_string();
        let changed = || ToolError::Changed {
            tool,
            path: shown.clone(),
        };
        let identity =
            Identity::of(fd).map_err(|errno| from_errno(tool, "inspect", &shown, errno))?;
        let named_now = |depth: usize| match depth {
            0 => Ok(None),
            _ => self
                .root
                .open_exact(
                    &relative(&path.components()[..depth]),
                    OFlags::PATH | OFlags::NOFOLLOW,
                    Mode::empty(),
                )
                .and_then(|fd| Identity::of(&fd))
                .map(Some)
                .map_err(|errno| match errno {
                    Errno::LOOP | Errno::NOENT | Errno::NOTDIR => changed(),
                    errno => from_errno(tool, "inspect", &shown, errno),
                }),
        };
        if depth > 0 && named_now(depth)? != Some(identity) {
            return Err(changed());
        }
        let anchored = match judged.at(depth) {
            Some(was) => was == identity,
            None => {
                let existing = judged.existing().min(depth);
                named_now(existing)? == judged.at(existing)
            }
        };
        if anchored { Ok(()) } else { Err(changed()) }
    }

    /// The descriptor on the environment root (paths resolved in it as in a chroot).
    pub(crate) fn root(&self) -> &Confined {
        &self.root
    }

    /// The part of `path` below a writable location, opened for strict confinement: the
    /// location, the parent components below it and the final name.
    pub(crate) fn writable<'p>(
        &self,
        tool: &'static str,
        path: &'p SandboxPath,
    ) -> Result<Writable<'p>, ToolError> {
        let top = path.top().unwrap_or_default();
        let allowed = self.is_writable(top);
        let writable = if self.agents_writable {
            "/workspace and /.agents"
        } else {
            "/workspace"
        };
        if !allowed {
            return Err(ToolError::ReadOnly {
                tool,
                path: path.to_string(),
                writable,
            });
        }
        let Some((name, parent)) = path.components()[1..].split_last() else {
            return Err(ToolError::IsDirectory {
                tool,
                path: path.to_string(),
                hint: "name a file inside it",
            });
        };
        let protected_by_name = top == WORKSPACE
            && path.components().get(1).map(String::as_str) == Some(WORKSPACE_AGENTS);
        if self.protect_workspace_agents && protected_by_name {
            return Err(protected(tool, path));
        }
        let area = self
            .root
            .exactly_beneath(top)
            .map_err(|errno| errno_at(tool, "open", path, top, errno))?;
        let writable = Writable {
            area,
            top: top.to_owned(),
            parent,
            name,
            path,
        };
        // The deepest directory that exists already, before anything is created below it.
        let existing = (0..=parent.len()).rev().find_map(|depth| {
            writable
                .area
                .open_dir(&parent[..depth])
                .ok()
                .map(|fd| (depth, fd))
        });
        if let Some((depth, dir)) = existing {
            let name = (depth == parent.len()).then_some(name.as_str());
            self.refuse_protected(tool, &writable, &dir, name)?;
        }
        Ok(writable)
    }

    /// Refuses `target` when the directory `dir` on its way (its parent, or the deepest
    /// existing ancestor) is, or lies in, the owner's `/workspace/.agents`, or when `name` in
    /// `dir` is that directory itself, however the path got there (links, `..`).
    pub(crate) fn refuse_protected(
        &self,
        tool: &'static str,
        target: &Writable<'_>,
        dir: &std::os::fd::OwnedFd,
        name: Option<&str>,
    ) -> Result<(), ToolError> {
        if !self.protect_workspace_agents || target.top != WORKSPACE {
            return Ok(());
        }
        let inspect = |errno| target.error(tool, "inspect", errno);
        let agents = match target.area.open_dir(&[WORKSPACE_AGENTS.to_owned()]) {
            Ok(agents) => agents,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(()),
            Err(errno) => return Err(inspect(errno)),
        };
        let area = target.area.open_dir(&[]).map_err(inspect)?;
        let itself = match name {
            Some(name) => agents::is_itself(dir, name, &agents).map_err(inspect)?,
            None => false,
        };
        if itself || agents::is_inside(&area, &agents, dir).map_err(inspect)? {
            return Err(protected(tool, target.path));
        }
        Ok(())
    }
}

/// The error for a write or delete in the owner's `/workspace/.agents`.
fn protected(tool: &'static str, path: &SandboxPath) -> ToolError {
    ToolError::ReadOnly {
        tool,
        path: path.to_string(),
        writable: "/workspace outside /workspace/.agents (the environment owner's hook \
                   configuration, which only the owner changes, through the Environments API)",
    }
}

impl FileTools {
    /// Whether the top-level entry `top` may be written to.
    fn is_writable(&self, top: &str) -> bool {
        top == WORKSPACE || (top == AGENTS && self.agents_writable)
    }
}

/// A file tool's arguments as shown to the hooks (the path resolved), with what the path
/// named then; the tool acts on that or fails.
#[derive(Debug, Clone)]
pub struct Resolved {
    args: Value,
    judged: Judged,
}

impl Resolved {
    /// Arguments that name no file (`code_execution`'s), as they are.
    pub fn unjudged(args: Value) -> Self {
        Self {
            args,
            judged: Judged::default(),
        }
    }

    /// The arguments the hooks are shown and the tool runs with.
    pub fn args(&self) -> &Value {
        &self.args
    }
}

/// A path inside a writable location.
pub(crate) struct Writable<'p> {
    /// The location, with strict confinement below it.
    pub(crate) area: Confined,
    /// The location's top-level name (`workspace`, `.agents`).
    pub(crate) top: String,
    /// Components between the location and the final name.
    pub(crate) parent: &'p [String],
    /// The final component.
    pub(crate) name: &'p str,
    /// The whole sandbox path.
    pub(crate) path: &'p SandboxPath,
}

impl Writable<'_> {
    /// The error for `errno` from `action` on this path.
    pub(crate) fn error(
        &self,
        tool: &'static str,
        action: &'static str,
        errno: Errno,
    ) -> ToolError {
        errno_at(tool, action, self.path, &self.top, errno)
    }
}

/// Maps `errno` on `path` inside location `top`, where `EXDEV` means a link led out of it.
fn errno_at(
    tool: &'static str,
    action: &'static str,
    path: &SandboxPath,
    top: &str,
    errno: Errno,
) -> ToolError {
    if errno == Errno::XDEV {
        return ToolError::LeavesArea {
            tool,
            path: path.to_string(),
            area: top.to_owned(),
        };
    }
    exact_errno(tool, action, &path.to_string(), errno)
}

/// Maps `errno` from `action` on the resolved path `path`, opened without following links: a
/// link there (`ELOOP`) appeared since the path was resolved.
pub(crate) fn exact_errno(
    tool: &'static str,
    action: &'static str,
    path: &str,
    errno: Errno,
) -> ToolError {
    if errno == Errno::LOOP {
        return ToolError::Changed {
            tool,
            path: path.to_owned(),
        };
    }
    from_errno(tool, action, path, errno)
}

/// Parses the sandbox path argument of `tool`.
pub(crate) fn sandbox_path(tool: &'static str, text: &str) -> Result<SandboxPath, ToolError> {
    SandboxPath::parse(text, WORKSPACE).map_err(|problem| ToolError::InvalidPath {
        tool,
        problem: problem.explain(text),
    })
}

/// The file tool named `name`, with how it acts on its path.
fn file_tool(name: &str) -> Result<(&'static ToolDefinition, FileTool), ToolError> {
    match builtin_tool(Vocabulary::Sandbox, name) {
        Some(
            definition @ ToolDefinition {
                run: Run::File(file),
                ..
            },
        ) => Ok((definition, *file)),
        _ => Err(ToolError::UnknownTool(name.to_owned())),
    }
}
