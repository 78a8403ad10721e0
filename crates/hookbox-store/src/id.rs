//! Fresh interaction ids (`int_` + 26 lowercase base32 characters) and id validation.

use std::fs::File;
use std::io::Read;

use crate::error::Error;

/// Longest id or idempotency key accepted.
const MAX_LEN: usize = 128;

/// The RFC 4648 base32 alphabet, lowercased.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A fresh interaction id: `int_` and 128 random bits in base32.
pub(crate) fn generate_interaction_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut file| file.read_exact(&mut bytes))
        .map_err(Error::Random)?;
    Ok(format!("int_{}", base32(&bytes)))
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

/// Unpadded lowercase base32 of `bytes`.
fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc_4648_vectors() {
        assert_eq!(base32(b"foobar"), "mzxw6ytboi");
        assert_eq!(base32(b"f"), "my");
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
