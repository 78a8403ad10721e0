//! Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "{webhook-id}.{webhook-timestamp}.{body}">`, keyed by a `whsec_<base64>` secret.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;

/// The prefix of Standard Webhooks secrets.
const SECRET_PREFIX: &str = "whsec_";

/// A signing key from `[audit] signing_secret`. Its `Debug` output never shows the key.
#[derive(Clone)]
pub struct WebhookSigner {
    key: hmac::Key,
}

impl fmt::Debug for WebhookSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSigner(..)")
    }
}

impl WebhookSigner {
    /// The signer of secret `whsec_<base64>` (the prefix may be left out, as the reference
    /// libraries allow); `None` when the rest is not standard base64 of at least 16 bytes.
    pub fn new(secret: &str) -> Option<Self> {
        let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
        let bytes = STANDARD.decode(encoded.trim()).ok()?;
        (bytes.len() >= 16).then(|| Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, &bytes),
        })
    }

    /// The `webhook-signature` value of event `id` sent at Unix second `timestamp`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(format!("{id}.{timestamp}.").as_bytes());
        context.update(body);
        format!("v1,{}", STANDARD.encode(context.sign().as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::WebhookSigner;

    #[test]
    fn the_standard_webhooks_test_vector_is_reproduced() {
        let signer = WebhookSigner::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            signer.sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let unprefixed = WebhookSigner::new("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(unprefixed.sign("a", 1, b"{}"), signer.sign("a", 1, b"{}"));
    }

    #[test]
    fn short_or_malformed_secrets_are_refused() {
        for bad in ["whsec_", "whsec_not base64!", "whsec_c2hvcnQ="] {
            assert!(WebhookSigner::new(bad).is_none(), "{bad}");
        }
        assert_eq!(
            format!(
                "{:?}",
                WebhookSigner::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            ),
            "Some(WebhookSigner(..))"
        );
    }
}
