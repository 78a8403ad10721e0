//! The credential store as the [`CredentialSource`] egress policies resolve allowlist
//! `credential`s from: each lookup reads the store, so credentials added later are seen.

use hookbox_net::{Credential, CredentialSource};

use super::CredentialStore;

impl CredentialSource for CredentialStore {
    fn credential(&self, id: &str) -> Result<Option<Credential>, String> {
        match self.get(id) {
            Ok(found) => Ok(found.map(|stored| {
                Credential::new(
                    stored.header.clone(),
                    stored.value(),
                    stored.domains.clone(),
                )
            })),
            Err(error) => Err(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use hookbox_net::CredentialSource;

    use super::CredentialStore;

    #[test]
    fn the_store_resolves_credentials_with_their_domains() {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(home.path()).unwrap();
        store
            .add("tok", Some("X-Key"), "v4lue", &["api.example.com"])
            .unwrap();
        let credential = store.credential("tok").unwrap().unwrap();
        assert_eq!(
            (credential.header(), credential.value()),
            ("X-Key", "v4lue")
        );
        assert!(credential.may_go_to("api.example.com"));
        assert!(!credential.may_go_to("evil.example"));
        assert_eq!(store.credential("missing").unwrap(), None);
        assert!(
            store
                .credential("bad/name")
                .unwrap_err()
                .contains("bad/name")
        );
    }
}
