//! The one clock of hookbox: timestamps are milliseconds since the Unix epoch, shown as
//! ISO-8601 UTC to the second (`YYYY-MM-DDThh:mm:ssZ`, formatted by the `time` crate).

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

/// The wire format: ISO-8601 UTC to the second.
const ISO_8601: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");

/// An instant, to the millisecond. Displays as the wire format, e.g. `2026-01-01T00:00:05Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time (the epoch if the clock is before it).
    pub fn now() -> Self {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
            });
        Self(millis)
    }

    /// The instant `millis` milliseconds after the Unix epoch.
    pub fn from_unix_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(self) -> i64 {
        self.0
    }
}

impl Timestamp {
    /// The instant `seconds` seconds after the Unix epoch (e.g. a file's modification time).
    pub fn from_unix_seconds(seconds: i64) -> Self {
        Self(seconds.saturating_mul(1000))
    }
}

/// Text that is not a timestamp in the wire format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a UTC time like 2026-01-01T00:00:05Z")]
pub struct NotATimestamp(String);

impl FromStr for Timestamp {
    type Err = NotATimestamp;

    /// Reads the wire format, e.g. `2026-01-01T00:00:05Z`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        PrimitiveDateTime::parse(text, ISO_8601)
            .map(|instant| Self::from_unix_seconds(instant.assume_utc().unix_timestamp()))
            .map_err(|_| NotATimestamp(text.to_owned()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.0.div_euclid(1000);
        // Outside the years -9999 to 9999 (never a real clock's reading): the raw number.
        match OffsetDateTime::from_unix_timestamp(seconds) {
            Ok(instant) => f.write_str(&instant.format(ISO_8601).map_err(|_| fmt::Error)?),
            Err(_) => write!(f, "@{seconds}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        let show = |millis| Timestamp::from_unix_millis(millis).to_string();
        assert_eq!(show(0), "1970-01-01T00:00:00Z");
        assert_eq!(show(951_782_400_999), "2000-02-29T00:00:00Z");
        assert_eq!(show(1_767_225_605_000), "2026-01-01T00:00:05Z");
        assert_eq!(show(-1000), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn the_wire_format_reads_back() {
        let instant: Timestamp = "2026-01-01T00:00:05Z".parse().unwrap();
        assert_eq!(instant, Timestamp::from_unix_millis(1_767_225_605_000));
        for bad in [
            "2026-01-01",
            "2026-01-01T00:00:05",
            "yesterday",
            "2026-13-01T00:00:00Z",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad}");
        }
    }
}
