//! `[audit]` in `hookbox.toml`: how long and how hard the deliverer tries (and how often a
//! receiver may refuse an event), how much the outbox holds, and the Standard Webhooks signing
//! secret.

use std::time::Duration;

use anyhow::bail;
use serde::Deserialize;

use super::signature::WebhookSigner;

/// `[audit]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    /// How long an event is retried before it is kept as `dead`: seconds, or a number with
    /// `s`, `m`, `h` or `d` (default `"24h"`).
    pub max_age: Option<DurationValue>,
    /// The longest wait between two attempts on one event (default `"5m"`).
    pub max_backoff: Option<DurationValue>,
    /// How many events may wait at once; past it the oldest are kept as `dead` (default
    /// 100,000).
    pub max_pending: Option<u64>,
    /// How many attempts on one event the receiver may refuse (a 4xx status other than 408
    /// and 429) before the event is kept as `dead` and its queue moves on (default 3).
    pub dead_letter_after_attempts: Option<u32>,
    /// The Standard Webhooks secret (`whsec_<base64>`) that signs every delivery.
    pub signing_secret: Option<String>,
}

/// A duration in `hookbox.toml`: whole seconds, or text such as `"90s"`, `"30m"`, `"24h"`,
/// `"7d"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum DurationValue {
    /// Whole seconds.
    Seconds(u64),
    /// A number and a unit.
    Text(String),
}

/// `[audit]`, checked.
#[derive(Debug, Clone)]
pub struct AuditSettings {
    /// See [`AuditSection::max_age`].
    pub max_age: Duration,
    /// See [`AuditSection::max_backoff`].
    pub max_backoff: Duration,
    /// See [`AuditSection::max_pending`].
    pub max_pending: u64,
    /// See [`AuditSection::dead_letter_after_attempts`].
    pub dead_letter_after_attempts: u32,
    /// The signer of `signing_secret`, if set.
    pub signer: Option<WebhookSigner>,
}

/// `[audit] max_age` unless set.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// `[audit] max_backoff` unless set.
const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(5 * 60);
/// `[audit] max_pending` unless set.
const DEFAULT_MAX_PENDING: u64 = 100_000;
/// `[audit] dead_letter_after_attempts` unless set: a receiver may answer 404 or 401 for a
/// moment while it is redeployed, but a refusal this many times over a few seconds is meant.
const DEFAULT_DEAD_LETTER_AFTER_ATTEMPTS: u32 = 3;

impl AuditSection {
    /// The checked settings; errors name `file`, the key and what a valid value looks like.
    pub fn settings(&self, file: &str) -> anyhow::Result<AuditSettings> {
        let duration = |value: &Option<DurationValue>, key: &str, default: Duration| {
            value
                .as_ref()
                .map_or(Ok(default), |value| parse_duration(value, key, file))
        };
        let max_pending = self.max_pending.unwrap_or(DEFAULT_MAX_PENDING);
        if max_pending == 0 {
            bail!(
                "{file}: [audit] max_pending: 0 would shed every event; write a whole number of \
                 at least 1 (the default is 100000)"
            );
        }
        let dead_letter_after_attempts = self
            .dead_letter_after_attempts
            .unwrap_or(DEFAULT_DEAD_LETTER_AFTER_ATTEMPTS);
        if dead_letter_after_attempts == 0 {
            bail!(
                "{file}: [audit] dead_letter_after_attempts: 0 would give up on an event before \
                 sending it; write a whole number of at least 1 (the default is \
                 {DEFAULT_DEAD_LETTER_AFTER_ATTEMPTS})"
            );
        }
        let signer = match &self.signing_secret {
            None => None,
            Some(secret) => Some(WebhookSigner::new(secret).ok_or_else(|| {
                anyhow::anyhow!(
                    "{file}: [audit] signing_secret: not a Standard Webhooks secret; write \
                     `whsec_` followed by the base64 of at least 16 random bytes (e.g. the output \
                     of `openssl rand -base64 32`)"
                )
            })?),
        };
        Ok(AuditSettings {
            max_age: duration(&self.max_age, "max_age", DEFAULT_MAX_AGE)?,
            max_backoff: duration(&self.max_backoff, "max_backoff", DEFAULT_MAX_BACKOFF)?,
            max_pending,
            dead_letter_after_attempts,
            signer,
        })
    }
}

impl DurationValue {
    /// The whole seconds it stands for, unless it is not a number with a known unit (or is too
    /// large).
    pub fn seconds(&self) -> Option<u64> {
        match self {
            Self::Seconds(seconds) => Some(*seconds),
            Self::Text(text) => {
                let text = text.trim();
                let split = text
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(text.len());
                let (number, unit) = text.split_at(split);
                let scale = match unit.trim() {
                    "" | "s" => Some(1),
                    "m" => Some(60),
                    "h" => Some(60 * 60),
                    "d" => Some(24 * 60 * 60),
                    _ => None,
                };
                number
                    .parse::<u64>()
                    .ok()
                    .zip(scale)
                    .and_then(|(number, scale)| number.checked_mul(scale))
            }
        }
    }
}

/// `value` of `[audit] key` as a positive duration.
fn parse_duration(value: &DurationValue, key: &str, file: &str) -> anyhow::Result<Duration> {
    let seconds = value.seconds();
    match seconds {
        Some(seconds @ 1..) => Ok(Duration::from_secs(seconds)),
        _ => bail!(
            "{file}: [audit] {key}: {} is not a duration; write a positive whole number of \
             seconds or a number with a unit, e.g. \"90s\", \"30m\", \"24h\", \"7d\"",
            match value {
                DurationValue::Seconds(seconds) => seconds.to_string(),
                DurationValue::Text(text) => format!("{text:?}"),
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{AuditSection, DurationValue};

    fn section(text: &str) -> AuditSection {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn defaults_and_units() {
        let settings = AuditSection::default().settings("h.toml").unwrap();
        assert_eq!(settings.max_age, Duration::from_secs(86_400));
        assert_eq!(settings.max_backoff, Duration::from_secs(300));
        assert_eq!(settings.max_pending, 100_000);
        assert_eq!(settings.dead_letter_after_attempts, 3);
        assert!(settings.signer.is_none());
        let settings = section(
            "max_age = \"7d\"\nmax_backoff = 2\nmax_pending = 5\ndead_letter_after_attempts = 1\n\
             signing_secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"",
        )
        .settings("h.toml")
        .unwrap();
        assert_eq!(settings.max_age, Duration::from_secs(7 * 86_400));
        assert_eq!(settings.max_backoff, Duration::from_secs(2));
        assert_eq!(settings.max_pending, 5);
        assert_eq!(settings.dead_letter_after_attempts, 1);
        assert!(settings.signer.is_some());
        for (text, seconds) in [("90s", 90), ("30m", 1800), ("24h", 86_400), ("15", 15)] {
            let section = AuditSection {
                max_age: Some(DurationValue::Text(text.to_owned())),
                ..AuditSection::default()
            };
            assert_eq!(
                section.settings("h.toml").unwrap().max_age,
                Duration::from_secs(seconds)
            );
        }
    }

    #[test]
    fn bad_values_name_the_file_and_key() {
        for (text, key) in [
            ("max_age = \"1 week\"", "[audit] max_age"),
            ("max_age = 0", "[audit] max_age"),
            ("max_backoff = \"m\"", "[audit] max_backoff"),
            ("max_pending = 0", "[audit] max_pending"),
            (
                "dead_letter_after_attempts = 0",
                "[audit] dead_letter_after_attempts",
            ),
            ("signing_secret = \"hunter2\"", "[audit] signing_secret"),
        ] {
            let message = format!("{:#}", section(text).settings("/etc/h.toml").unwrap_err());
            assert!(
                message.starts_with(&format!("/etc/h.toml: {key}: ")),
                "{text}: {message}"
            );
            assert!(!message.contains("hunter2"), "{message}");
        }
    }
}
