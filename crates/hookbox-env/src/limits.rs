//! `limits`: an environment's disk and inode budget, lower than (or equal to) the server's.

use hookbox_exec::disk::DiskBudget;
use serde_json::Value;

use crate::json::{self, SpecError, member};

/// The members `limits` may have.
const FIELDS: &[&str] = &["disk_bytes", "disk_inodes"];

/// The `limits` object of a spec: each value absent means "the server's".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Size of the environment's file system in bytes.
    pub disk_bytes: Option<u64>,
    /// Number of files, directories and links it can hold.
    pub disk_inodes: Option<u64>,
}

impl Limits {
    /// Parses the `limits` object found at JSON path `path`.
    pub(crate) fn parse(value: &Value, path: &str) -> Result<Self, SpecError> {
        let map = json::object(value, path, "a limits object")?;
        json::known_keys(map, path, FIELDS)?;
        let number = |key: &str| -> Result<Option<u64>, SpecError> {
            let Some(value) = map.get(key) else {
                return Ok(None);
            };
            value.as_u64().map(Some).ok_or_else(|| {
                SpecError::new(
                    member(path, key),
                    format!("expected a positive whole number, got {value}"),
                )
            })
        };
        let limits = Self {
            disk_bytes: number("disk_bytes")?,
            disk_inodes: number("disk_inodes")?,
        };
        if let Some(bytes) = limits.disk_bytes.filter(|b| *b < DiskBudget::MIN_BYTES) {
            return Err(SpecError::new(
                member(path, "disk_bytes"),
                format!(
                    "{bytes} bytes is too small for a file system; give at least {} (4 MiB)",
                    DiskBudget::MIN_BYTES
                ),
            ));
        }
        if let Some(inodes) = limits
            .disk_inodes
            .filter(|n| !(DiskBudget::MIN_INODES..=DiskBudget::MAX_INODES).contains(n))
        {
            return Err(SpecError::new(
                member(path, "disk_inodes"),
                format!(
                    "{inodes} is outside {}..={}",
                    DiskBudget::MIN_INODES,
                    DiskBudget::MAX_INODES
                ),
            ));
        }
        Ok(limits)
    }

    /// The budget of an environment on a server whose budget is `server`: each value given
    /// here, else the server's. A value above the server's is refused as `(JSON path, problem)`.
    pub(crate) fn within(&self, server: DiskBudget) -> Result<DiskBudget, (String, String)> {
        let pick = |asked: Option<u64>, max: u64, key: &str| match asked {
            Some(asked) if asked > max => Err((
                format!("$.limits.{key}"),
                format!(
                    "{asked} is above this server's `[sandbox] {key}` of {max}; an environment \
                     may lower the server's budget but not raise it"
                ),
            )),
            Some(asked) => Ok(asked),
            None => Ok(max),
        };
        let bytes = pick(self.disk_bytes, server.bytes, "disk_bytes")?;
        let inodes = pick(self.disk_inodes, server.inodes, "disk_inodes")?;
        let max = DiskBudget::max_inodes(bytes);
        match self.disk_inodes {
            Some(asked) if asked > max => Err((
                "$.limits.disk_inodes".to_owned(),
                format!(
                    "{asked} inodes do not fit in {bytes} bytes (at most one per KiB: {max}); \
                     ask for fewer inodes or more disk_bytes"
                ),
            )),
            Some(_) => Ok(DiskBudget { bytes, inodes }),
            // Not asked for: the server's count, lowered to what the size can hold.
            None => Ok(DiskBudget {
                bytes,
                inodes: inodes.min(max),
            }),
        }
    }
}
