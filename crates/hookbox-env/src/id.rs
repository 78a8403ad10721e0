//! Environment ids (`env_` + 26 lowercase base32 characters) and random names.

use std::fs::File;
use std::io::{self, Read};

/// Prefix of every environment id.
const PREFIX: &str = "env_";

/// Characters of a random token: 128 bits in lowercase RFC 4648 base32, unpadded.
const TOKEN_LEN: usize = 26;

/// The RFC 4648 base32 alphabet, lowercased.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A fresh environment id.
pub(crate) fn generate() -> io::Result<String> {
    Ok(format!("{PREFIX}{}", random_token()?))
}

/// Whether `id` has the shape of an environment id (so it is safe as a directory name).
pub(crate) fn is_valid(id: &str) -> bool {
    id.strip_prefix(PREFIX).is_some_and(|token| {
        token.len() == TOKEN_LEN && token.bytes().all(|b| ALPHABET.contains(&b))
    })
}

/// 16 bytes from the kernel's random source, as 26 base32 characters.
pub(crate) fn random_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(base32(&bytes))
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
        let (a, b) = (generate().unwrap(), generate().unwrap());
        assert!(is_valid(&a) && is_valid(&b), "{a} {b}");
        assert_ne!(a, b);
        for bad in [
            "../x",
            "env_",
            "env_ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "env_abcdefghijklmnopqrstuvw1",
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
    }
}
