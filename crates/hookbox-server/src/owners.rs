//! Environments, files and interactions belong to the API key that created them. To any other
//! key they do not exist: every check here answers exactly what a missing id answers (404).
//! [`Owners::may_use`] is the one rule, and every interface that names an environment or an
//! interaction (the REST API's routes, `hookbox mcp --listen`) asks it through [`Owners`].

use std::sync::Arc;

use hookbox_env::StoreError;
use hookbox_store::{Entity, Resource, Store};

use crate::auth::{Auth, Caller};
use crate::error::ApiError;
use crate::files::blocking;

/// Who owns what, in one store, under one way of authenticating.
#[derive(Clone)]
pub(crate) struct Owners {
    store: Arc<dyn Store>,
    auth: Auth,
}

impl Owners {
    /// The owners recorded in `store`, for a server authenticating as `auth` says.
    pub(crate) fn new(store: Arc<dyn Store>, auth: Auth) -> Self {
        Self { store, auth }
    }

    /// The rule: `caller` may see and use what `owner` owns (`None`: no owner recorded) when
    /// it is that owner; without authentication the anonymous caller also owns what has no
    /// owner (made before keys existed, or with `hookbox env`). Nothing else decides it.
    fn may_use(&self, caller: &Caller, owner: Option<&str>) -> bool {
        match owner {
            Some(owner) => owner == caller.owner(),
            None => caller.is_anonymous() && self.auth == Auth::Disabled,
        }
    }

    /// Whether `caller` may use `resource` `id`.
    pub(crate) async fn owns(
        &self,
        caller: &Caller,
        resource: Resource,
        id: &str,
    ) -> Result<bool, ApiError> {
        let store = Arc::clone(&self.store);
        let owned_id = id.to_owned();
        let owner = blocking(move || {
            store
                .owner(resource, &owned_id)
                .map_err(|err| ApiError::store("cannot read the owner", &err))
        })
        .await?;
        Ok(self.may_use(caller, owner.as_deref()))
    }

    /// `Ok` if `caller` may use environment `id`, else the 404 of an environment that does not
    /// exist.
    pub(crate) async fn environment(&self, caller: &Caller, id: &str) -> Result<(), ApiError> {
        let id = id.strip_prefix("environments/").unwrap_or(id);
        if self.owns(caller, Resource::Environment, id).await? {
            return Ok(());
        }
        Err(StoreError::NotFound { id: id.to_owned() }.into())
    }

    /// `Ok` if `caller` may use interaction `id`, else the 404 of an interaction that does not
    /// exist.
    pub(crate) async fn interaction(&self, caller: &Caller, id: &str) -> Result<(), ApiError> {
        if self.owns(caller, Resource::Interaction, id).await? {
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
        &self,
        caller: &Caller,
        resource: Resource,
        id: &str,
    ) -> Result<(), ApiError> {
        let store = Arc::clone(&self.store);
        let owner = caller.owner().to_owned();
        let id = id.to_owned();
        blocking(move || {
            store
                .claim(resource, &id, &owner)
                .map_err(|err| ApiError::store("cannot record the owner", &err))
        })
        .await
    }

    /// The environments of `all` that `caller` may use, in their order.
    pub(crate) async fn environments(
        &self,
        caller: &Caller,
        all: Vec<hookbox_env::Environment>,
    ) -> Result<Vec<hookbox_env::Environment>, ApiError> {
        let owners = self.clone();
        let caller = caller.clone();
        blocking(move || {
            let mut visible = Vec::with_capacity(all.len());
            for environment in all {
                let owner = owners
                    .store
                    .owner(Resource::Environment, environment.id())
                    .map_err(|err| ApiError::store("cannot read the owners", &err))?;
                if owners.may_use(&caller, owner.as_deref()) {
                    visible.push(environment);
                }
            }
            Ok(visible)
        })
        .await
    }
}
