//! What a credential's name, header and value may be.

use super::CredentialError;

/// The longest credential name.
const MAX_NAME: usize = 64;

/// Checks that `name` is 1 to 64 characters of `A-Z a-z 0-9 _ . -` (so it is a safe file name
/// and a stable id for `network.allowlist[].credential`).
pub(super) fn validate_name(name: &str) -> Result<(), CredentialError> {
    let invalid = |reason: &str| CredentialError::InvalidName {
        name: name.escape_debug().to_string(),
        reason: reason.to_owned(),
    };
    if name.is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.len() > MAX_NAME {
        return Err(invalid("it is longer than 64 characters"));
    }
    if !name
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
    {
        return Err(invalid(
            "use only letters, digits, `_`, `.` and `-` (1 to 64 characters)",
        ));
    }
    Ok(())
}

/// Checks that `header` is an HTTP header name (a token) that hookbox does not set itself.
pub(super) fn validate_header(name: &str, header: &str) -> Result<(), CredentialError> {
    let invalid = |reason: &str| CredentialError::InvalidHeader {
        name: name.to_owned(),
        header: header.escape_debug().to_string(),
        reason: reason.to_owned(),
    };
    let token = |byte: u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
    if header.is_empty() || !header.bytes().all(token) {
        return Err(invalid(
            "not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)",
        ));
    }
    let reserved = [
        "content-type",
        "content-length",
        "host",
        "transfer-encoding",
    ];
    if reserved
        .iter()
        .any(|reserved| header.eq_ignore_ascii_case(reserved))
    {
        return Err(invalid("hookbox sets this header itself"));
    }
    Ok(())
}

/// Checks that `value` is non-empty and can be sent as a header value (no control characters
/// but tab). The error never quotes the value.
pub(super) fn validate_value(name: &str, value: &str) -> Result<(), CredentialError> {
    let invalid = |reason: &str| CredentialError::InvalidValue {
        name: name.to_owned(),
        reason: reason.to_owned(),
    };
    if value.trim().is_empty() {
        return Err(invalid("it is empty"));
    }
    if value
        .chars()
        .any(|character| character.is_control() && character != '\t')
    {
        return Err(invalid(
            "it contains control characters or line breaks, which a header value cannot hold",
        ));
    }
    Ok(())
}

/// Checks `domains` (at least one; each a host or `*.example.com`, not `*`) and returns their
/// canonical forms, without duplicates, in the order given.
pub(super) fn validate_domains(
    name: &str,
    domains: &[&str],
) -> Result<Vec<String>, CredentialError> {
    let invalid = |reason: String| CredentialError::InvalidDomain {
        name: name.to_owned(),
        reason,
    };
    if domains.is_empty() {
        return Err(invalid(format!(
            "a credential needs at least one domain it may be sent to; add it with \
             `hookbox credentials add {name} --domain api.example.com` (repeat --domain, \
             `*.example.com` for subdomains)"
        )));
    }
    let mut canonical: Vec<String> = Vec::with_capacity(domains.len());
    for domain in domains {
        let parsed = hookbox_net::parse_credential_domain(domain).map_err(invalid)?;
        if !canonical.contains(&parsed) {
            canonical.push(parsed);
        }
    }
    Ok(canonical)
}
