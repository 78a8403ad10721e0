//! Refusing a spec that names credentials this server does not hold, before anything is
//! written.

use hookbox_net::{CredentialSource, EgressPolicy};

use crate::credentials::CredentialStore;
use crate::env_vars::EnvValue;
use crate::sources::Source;
use crate::sources::gcs;
use crate::spec::EnvironmentSpec;

use super::{Environments, StoreError};

impl Environments {
    /// Refuses a spec that names a credential this server does not hold (in
    /// `network.allowlist[i].credential`, an `env` value or a `gs://` source), or binds one to a
    /// domain it may not be sent to (an allowlist entry's `domain`, Cloud Storage's host),
    /// before anything is written.
    pub(super) fn check_credentials(&self, spec: &EnvironmentSpec) -> Result<(), StoreError> {
        let network = spec
            .network
            .as_ref()
            .filter(|network| names_credential(network));
        let mut wanted: Vec<(String, &str, Option<&str>)> = Vec::new();
        for var in spec.env.iter().flatten() {
            if let EnvValue::Credential { credential } = &var.value {
                wanted.push((format!("$.env.{}.credential", var.name), credential, None));
            }
        }
        for (index, source) in spec.sources.iter().enumerate() {
            if let Source::CloudStorage {
                credential: Some(credential),
                ..
            } = source
            {
                let path = format!("$.sources[{index}].credential");
                wanted.push((path, credential, Some(gcs::HOST)));
            }
        }
        let Some(first_path) = network
            .map(|_| "$.network".to_owned())
            .or_else(|| wanted.first().map(|(path, _, _)| path.clone()))
        else {
            return Ok(());
        };
        let store = CredentialStore::open(self.home()).map_err(|err| StoreError::Misplaced {
            path: first_path,
            problem: format!("cannot read the credential store: {err}"),
        })?;
        if let Some(network) = network {
            EgressPolicy::from_network_with_credentials(Some(network), &store).map_err(
                |error| StoreError::Misplaced {
                    path: format!("$.{}", error.path),
                    problem: error.reason,
                },
            )?;
        }
        for (path, id, host) in wanted {
            let found = store.credential(id).map_err(|err| StoreError::Misplaced {
                path: path.clone(),
                problem: format!("cannot read credential `{id}`: {err}"),
            })?;
            let Some(found) = found else {
                return Err(StoreError::Misplaced {
                    path,
                    problem: format!(
                        "this server has no credential named `{id}`; add it with \
                         `hookbox credentials add {id} --domain HOST` (the value is read from \
                         stdin)"
                    ),
                });
            };
            if let Some(host) = host
                && let Err(problem) = gcs::check_credential_domain(id, &found, host)
            {
                return Err(StoreError::Misplaced { path, problem });
            }
        }
        Ok(())
    }
}

/// Whether some `allowlist` entry of `network` names a `credential`.
fn names_credential(network: &serde_json::Value) -> bool {
    network
        .get("allowlist")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|entries| {
            entries
                .iter()
                .any(|entry| entry.get("credential").is_some())
        })
}
