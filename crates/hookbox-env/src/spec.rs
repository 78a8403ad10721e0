//! The environment object of the Interactions and Environments APIs, validated.

use hookbox_store::json_kind;
use serde_json::Value;

use crate::env_vars::{self, EnvVar};
use crate::environment::is_environment_id;
use crate::json::{self, SpecError, element, member};
use crate::limits::Limits;
use crate::network;
use crate::sources::Source;

/// Every field an environment object may have.
const FIELDS: &[&str] = &[
    "type",
    "sources",
    "network",
    "env",
    "environment_id",
    "from_environment",
    "agents_writable",
    "limits",
];

/// A validated environment spec: what to create (or, with `environment_id`, what to add).
///
/// Parsed from the Interactions `environment` object (`{"type":"remote","sources",
/// "network","env","environment_id"}`) or the Environments create body (`{"from_environment",
/// "network","sources"}`). hookbox extension: `"agents_writable": true` lets the sandbox and
/// the file tools write `/.agents` (read-only by default, so the agent cannot edit its hooks);
/// `"limits": {"disk_bytes", "disk_inodes"}` lowers the server's disk budget for a new
/// environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironmentSpec {
    /// The environment to update instead of creating one.
    pub environment_id: Option<String>,
    /// An environment whose files a new environment starts from (Environments API).
    pub from_environment: Option<String>,
    /// Files and trees to place in the sandbox, in order.
    pub sources: Vec<Source>,
    /// The network policy, shape-checked but kept as given (hookbox-net interprets it).
    pub network: Option<Value>,
    /// Variables set in the sandbox; `None` when `env` was absent.
    pub env: Option<Vec<EnvVar>>,
    /// Whether `/.agents` is writable (hookbox extension); `None` when absent.
    pub agents_writable: Option<bool>,
    /// The disk and inode budget asked for (hookbox extension; creation only); `None` when
    /// absent.
    pub limits: Option<Limits>,
}

impl EnvironmentSpec {
    /// Parses an environment object whose JSON paths are reported from `$`.
    pub fn from_json(value: &Value) -> Result<Self, SpecError> {
        Self::from_json_at(value, "$")
    }

    /// Parses an environment object found at JSON path `path` (e.g. `$.environment`).
    pub fn from_json_at(value: &Value, path: &str) -> Result<Self, SpecError> {
        let map = json::object(value, path, "an environment object")?;
        json::known_keys(map, path, FIELDS)?;
        if let Some(kind) = map.get("type") {
            let kind_path = member(path, "type");
            let kind = json::string(kind, &kind_path, "\"remote\"")?;
            if kind != "remote" {
                return Err(SpecError::new(
                    kind_path,
                    format!("environment type `{kind}` is not supported; use \"remote\""),
                ));
            }
        }
        let sources = match map.get("sources") {
            None => Vec::new(),
            Some(value) => parse_sources(value, &member(path, "sources"))?,
        };
        let network = match map.get("network") {
            None => None,
            Some(value) => {
                network::validate(value, &member(path, "network"))?;
                Some(value.clone())
            }
        };
        let env = map
            .get("env")
            .map(|value| env_vars::parse(value, &member(path, "env")))
            .transpose()?;
        let agents_writable = match map.get("agents_writable") {
            None => None,
            Some(Value::Bool(flag)) => Some(*flag),
            Some(other) => {
                return Err(SpecError::new(
                    member(path, "agents_writable"),
                    format!("expected true or false, got {}", json_kind(other)),
                ));
            }
        };
        let limits = map
            .get("limits")
            .map(|value| Limits::parse(value, &member(path, "limits")))
            .transpose()?;
        let environment_id = environment_ref(map.get("environment_id"), path, "environment_id")?;
        let from_environment =
            environment_ref(map.get("from_environment"), path, "from_environment")?;
        if environment_id.is_some() && from_environment.is_some() {
            return Err(SpecError::new(
                member(path, "from_environment"),
                "give either `environment_id` (update it) or `from_environment` (copy it), not both",
            ));
        }
        Ok(Self {
            environment_id,
            from_environment,
            sources,
            network,
            env,
            agents_writable,
            limits,
        })
    }
}

/// The `sources` array, each source validated, with no two writing the same file.
fn parse_sources(value: &Value, path: &str) -> Result<Vec<Source>, SpecError> {
    let Value::Array(items) = value else {
        return Err(SpecError::new(
            path,
            format!("expected a list of sources, got {}", json_kind(value)),
        ));
    };
    let mut sources: Vec<Source> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_path = element(path, index);
        let source = Source::parse(item, &item_path)?;
        if let Some(earlier) = sources.iter().position(|other| collide(other, &source)) {
            return Err(SpecError::new(
                member(&item_path, "target"),
                format!(
                    "`{}` collides with the target of `{}`, which writes `{}`; give each file \
                     one source",
                    source.target(),
                    element(path, earlier),
                    sources[earlier].target()
                ),
            ));
        }
        sources.push(source);
    }
    Ok(sources)
}

/// Whether two sources certainly write the same file: two files at one path, or a file where
/// the other needs a directory. Two trees merged into one directory are checked file by file
/// when they are copied.
fn collide(a: &Source, b: &Source) -> bool {
    let (a_path, b_path) = (
        a.target().path().components(),
        b.target().path().components(),
    );
    let inline = |s: &Source| matches!(s, Source::Inline { .. });
    (inline(a) && b_path.starts_with(a_path)) || (inline(b) && a_path.starts_with(b_path))
}

/// An optional environment id member (`environment_id`, `from_environment`).
fn environment_ref(
    value: Option<&Value>,
    path: &str,
    key: &str,
) -> Result<Option<String>, SpecError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let id_path = member(path, key);
    let text = json::string(value, &id_path, "an environment id string")?;
    if !is_environment_id(text) {
        return Err(SpecError::new(
            id_path,
            format!("`{text}` is not a hookbox environment id (`env_` + 26 characters a-z, 2-7)"),
        ));
    }
    Ok(Some(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_full_environment_object_parses() {
        let spec = EnvironmentSpec::from_json(&json!({
            "type": "remote",
            "sources": [{"type": "inline", "target": "a.txt", "content": "aGk=", "encoding": "base64"}],
            "network": {"allowlist": [{"domain": "*.googleapis.com", "transform": {"X-A": "b"}}]},
            "env": {"A": "1"},
            "agents_writable": true
        }))
        .unwrap();
        assert_eq!(spec.sources.len(), 1);
        assert_eq!(spec.agents_writable, Some(true));
        assert!(spec.network.is_some() && spec.env.is_some());
    }

    #[test]
    fn nested_paths_use_the_given_root() {
        let err =
            EnvironmentSpec::from_json_at(&json!({"type": "local"}), "$.environment").unwrap_err();
        assert_eq!(err.path, "$.environment.type");
    }
}
