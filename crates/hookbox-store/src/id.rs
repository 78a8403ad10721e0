//! The one id generator of hookbox (interaction and environment ids, random names, UUIDs)
//! and the validation of ids callers give.
//!
//! Generated ids are a prefix and 128 bits from the operating system's random source
//! (`getrandom`) in unpadded lowercase RFC 4648 base32 (`data-encoding`): 26 characters, e.g.
//! `env_` + `mzxw6ytboi…`. No base32 crate spells it lowercase, so the standard alphabet's output
//! is lowercased.

use std::io;

use data_encoding::BASE32_NOPAD;

use crate::error::Error;

/// Longest id or idempotency key accepted.
const MAX_LEN: usize = 128;

/// Characters of a [`random_token`]: 128 bits in base32.
pub const TOKEN_LEN: usize = 26;

/// 26 lowercase base32 characters of 128 fresh random bits (for ids and unguessable names).
pub fn random_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(io::Error::from)?;
    Ok(BASE32_NOPAD.encode(&bytes).to_ascii_lowercase())
}

/// A fresh id: `prefix` (e.g. `env_`, `int_`) and a [`random_token`].
pub fn new_id(prefix: &str) -> io::Result<String> {
    Ok(format!("{prefix}{}", random_token()?))
}

/// Whether `id` is `prefix` and a token [`new_id`] could have made (so it is safe as a file
/// name).
pub fn is_generated_id(prefix: &str, id: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|token| {
        token.len() == TOKEN_LEN
            && token
                .bytes()
                .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
    })
}

/// A fresh random UUID (version 4), `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A fresh interaction id: `int_` and a [`random_token`].
pub(crate) fn generate_interaction_id() -> Result<String, Error> {
    new_id("int_").map_err(Error::Random)
}

/// Checks a caller-given id: 1 to 128 of `A-Z a-z 0-9 _ -` (safe in URL paths and file names).
pub(crate) fn check(field: &'static str, id: &str) -> Result<(), Error> {
    let fine = !id.is_empty()
        && id.len() <= MAX_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if fine {
        Ok(())
    } else {
        Err(Error::InvalidInput {
            field,
            problem: format!(
                "`{id}` must be 1 to {MAX_LEN} characters among letters, digits, `_` and `-`"
            ),
        })
    }
}

/// Checks an idempotency key: 1 to 128 visible ASCII characters.
pub(crate) fn check_key(key: &str) -> Result<(), Error> {
    if !key.is_empty() && key.len() <= MAX_LEN && key.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(Error::InvalidInput {
            field: "idempotency key",
            problem: format!("`{key}` must be 1 to {MAX_LEN} visible ASCII characters"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_lowercase_base32_of_128_bits() {
        assert_eq!(
            BASE32_NOPAD.encode(b"foobar").to_ascii_lowercase(),
            "mzxw6ytboi"
        );
        let token = random_token().unwrap();
        assert_eq!(token.len(), TOKEN_LEN);
        assert!(is_generated_id("", &token), "{token}");
    }

    #[test]
    fn generated_ids_have_their_prefix_and_bad_ones_are_told_apart() {
        let (a, b) = (new_id("env_").unwrap(), new_id("env_").unwrap());
        assert!(
            is_generated_id("env_", &a) && is_generated_id("env_", &b),
            "{a} {b}"
        );
        assert_ne!(a, b);
        for bad in [
            "../x",
            "env_",
            "env_ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "env_abcdefghijklmnopqrstuvw1",
            "int_abcdefghijklmnopqrstuvwxyz",
        ] {
            assert!(!is_generated_id("env_", bad), "{bad}");
        }
    }

    #[test]
    fn uuids_are_version_4_and_distinct() {
        let (a, b) = (new_uuid(), new_uuid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_eq!(a.matches('-').count(), 4);
    }

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let (a, b) = (
            generate_interaction_id().unwrap(),
            generate_interaction_id().unwrap(),
        );
        assert_eq!(a.len(), 30);
        assert!(check("id", &a).is_ok() && check("id", &b).is_ok());
        assert_ne!(a, b);
    }

    #[test]
    fn bad_ids_are_refused() {
        for bad in ["", "../x", "a b", "int/1", &"x".repeat(129)] {
            assert!(check("id", bad).is_err(), "{bad:?}");
        }
        assert!(check_key("retry 1").is_err());
        assert!(check_key("retry-1:abc").is_ok());
    }
}
