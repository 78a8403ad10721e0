//! Environments, files and interactions belong to the API key that created them. To any other
//! key they do not exist: every check here answers exactly what a missing id answers (404).

use std::sync::Arc;

use hookbox_env::StoreError;
use hookbox_store::{Entity, Resource};

use crate::Shared;
use crate::auth::{Auth, Caller};
use crate::error::ApiError;
use crate::files::blocking;

/// Whether `caller` owns `resource` `id`. Without authentication the anonymous caller also owns
/// what has no owner (made before keys existed, or with `hookbox env`).
pub(crate) async fn owns(
    state: &Shared,
    caller: &Caller,
    resource: Resource,
    id: &str,
) -> Result<bool, ApiError> {
    let store = Arc::clone(state.runtime.store());
    let owned_id = id.to_owned();
    let owner = blocking(move || {
        store
            .owner(resource, &owned_id)
            .map_err(|err| ApiError::internal("cannot read the owner", &err))
    })
    .await?;
    Ok(match owner {
        Some(owner) => owner == caller.owner(),
        None => caller.is_anonymous() && state.settings.auth == Auth::Disabled,
    })
}

/// `Ok` if `caller` owns environment `id`, else the 404 of an environment that does not exist.
pub(crate) async fn environment(state: &Shared, caller: &Caller, id: &str) -> Result<(), ApiError> {
    let id = id.strip_prefix("environments/").unwrap_or(id);
    if owns(state, caller, Resource::Environment, id).await? {
        return Ok(());
    }
    Err(StoreError::NotFound { id: id.to_owned() }.into())
}

/// `Ok` if `caller` owns interaction `id`, else the 404 of an interaction that does not exist.
pub(crate) async fn interaction(state: &Shared, caller: &Caller, id: &str) -> Result<(), ApiError> {
    if owns(state, caller, Resource::Interaction, id).await? {
        return Ok(());
    }
    Err(ApiError::not_found(
        hookbox_store::Error::NotFound {
            entity: Entity::Interaction,
            id: id.to_owned(),
        }
        .to_string(),
    ))
}

/// Records `caller` as the owner of `resource` `id` (a resource's owner never changes).
pub(crate) async fn claim(
    state: &Shared,
    caller: &Caller,
    resource: Resource,
    id: &str,
) -> Result<(), ApiError> {
    let store = Arc::clone(state.runtime.store());
    let owner = caller.owner().to_owned();
    let id = id.to_owned();
    blocking(move || {
        store
            .claim(resource, &id, &owner)
            .map_err(|err| ApiError::internal("cannot record the owner", &err))
    })
    .await
}

/// The environments of `all` that `caller` owns, in their order.
pub(crate) async fn environments(
    state: &Shared,
    caller: &Caller,
    all: Vec<hookbox_env::Environment>,
) -> Result<Vec<hookbox_env::Environment>, ApiError> {
    let store = Arc::clone(state.runtime.store());
    let owner = caller.owner().to_owned();
    let unowned_too = caller.is_anonymous() && state.settings.auth == Auth::Disabled;
    blocking(move || {
        let mut visible = Vec::with_capacity(all.len());
        for environment in all {
            let found = store
                .owner(Resource::Environment, environment.id())
                .map_err(|err| ApiError::internal("cannot read the owners", &err))?;
            let mine = match found {
                Some(found) => found == owner,
                None => unowned_too,
            };
            if mine {
                visible.push(environment);
            }
        }
        Ok(visible)
    })
    .await
}
