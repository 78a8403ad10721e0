//! Moving a staged tree into a live environment root without following links out of it.

use std::path::Path;

use rustix::fs::{self as rfs, FileType};
use rustix::io::Errno;

use crate::confined::{self, Confined};

/// Renames every file, symlink and (empty) directory of `staged` to the same place below
/// `root`, replacing files there. Conflicts (a directory where a file goes, a file where a
/// directory is needed) are found before anything moves. Returns what went wrong as a sentence.
pub(crate) fn place(staged: &Path, root: &Path) -> Result<(), String> {
    let fail = |what: &str, err: Errno| format!("cannot {what}: {}", std::io::Error::from(err));
    let from = Confined::in_root(staged).map_err(|err| fail("open the staging root", err))?;
    let to = Confined::in_root(root).map_err(|err| fail("open the environment root", err))?;
    let mut entries = Vec::new();
    collect(&from, &mut Vec::new(), &mut entries)
        .map_err(|err| fail("read the staged files", err))?;
    for (components, is_dir) in &entries {
        check(&to, components, *is_dir)?;
    }
    for (components, is_dir) in &entries {
        let (name, parent) = split(components);
        let shown = display(components);
        if *is_dir {
            to.make_dirs(components)
                .map_err(|err| fail(&format!("create `{shown}`"), err))?;
            continue;
        }
        let source_dir = from
            .open_dir(parent)
            .map_err(|err| fail(&format!("open the staged parent of `{shown}`"), err))?;
        let dest_dir = to
            .make_dirs(parent)
            .map_err(|err| fail(&format!("create the parent of `{shown}`"), err))?;
        rfs::renameat(&source_dir, name, &dest_dir, name)
            .map_err(|err| fail(&format!("move `{shown}` into place"), err))?;
    }
    Ok(())
}

/// Lists the entries below `dir` (components, whether a directory), parents first.
fn collect(
    from: &Confined,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, bool)>,
) -> Result<(), Errno> {
    let fd = from.open_dir(prefix)?;
    for name in confined::sorted_names(&fd)? {
        let is_dir = confined::entry(&fd, &name)?
            .is_some_and(|stat| confined::kind(&stat) == FileType::Directory);
        prefix.push(name);
        out.push((prefix.clone(), is_dir));
        if is_dir {
            collect(from, prefix, out)?;
        }
        prefix.pop();
    }
    Ok(())
}

/// Refuses to place an entry where the live root has something incompatible.
fn check(to: &Confined, components: &[String], is_dir: bool) -> Result<(), String> {
    let (name, parent) = split(components);
    let conflict = |what: &str| {
        Err(format!(
            "`{}` {what} in the environment; delete it first or choose another target",
            display(components)
        ))
    };
    let existing = match to.open_dir(parent) {
        Ok(dir) => confined::entry(&dir, name).ok().flatten(),
        Err(Errno::NOENT) => None,
        Err(Errno::NOTDIR) => return conflict("has a file where a directory is needed"),
        Err(err) => {
            return conflict(&format!(
                "cannot be reached ({})",
                std::io::Error::from(err)
            ));
        }
    };
    match existing.map(|stat| confined::kind(&stat)) {
        Some(FileType::Directory) if !is_dir => conflict("is a directory"),
        Some(kind) if is_dir && kind != FileType::Directory && kind != FileType::Symlink => {
            conflict("is a file where a directory is needed")
        }
        _ => Ok(()),
    }
}

/// The last component and the ones before it.
fn split(components: &[String]) -> (&str, &[String]) {
    match components.split_last() {
        Some((name, parent)) => (name, parent),
        None => (".", components),
    }
}

/// `components` as a sandbox path.
fn display(components: &[String]) -> String {
    format!("/{}", components.join("/"))
}
