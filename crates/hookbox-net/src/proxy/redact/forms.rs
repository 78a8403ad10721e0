//! The forms an injected value can come back in, each matched in place at a position of a
//! response: the value itself with any of its bytes escaped (`%XX`, JSON `\uXXXX` and `\"`,
//! `\\`, `\/`, `+` for a space; hex digits in either case), its hex digits (either case), and
//! the base64 characters that encode it at each of the three byte alignments it can have inside
//! a longer encoded string (standard or URL-safe alphabet; padding is outside the matched run,
//! so padded and unpadded encodings are both found).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;

/// One form of one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Form {
    /// The value's bytes, each as itself or escaped.
    Escaped(Vec<u8>),
    /// The value's bytes as lowercase hex digits (matched in either case).
    Hex(Vec<u8>),
    /// Standard-alphabet base64 characters determined by the value alone at one alignment
    /// (matched with `-` for `+` and `_` for `/` too).
    Base64(Vec<u8>),
}

/// The longest escape of one byte: `\u00XX`.
const LONGEST_ESCAPE: usize = 6;

/// Every form of `value` (a secret at least 8 bytes long).
pub(super) fn of(value: &[u8]) -> Vec<Form> {
    let mut forms = vec![
        Form::Escaped(value.to_vec()),
        Form::Hex(
            value
                .iter()
                .flat_map(|byte| format!("{byte:02x}").into_bytes())
                .collect(),
        ),
    ];
    for (alignment, skip) in [(0_usize, 0_usize), (1, 2), (2, 3)] {
        let mut aligned = vec![0_u8; alignment];
        aligned.extend_from_slice(value);
        let encoded = STANDARD_NO_PAD.encode(&aligned).into_bytes();
        // Characters whose six bits all come from the value: after those touching the
        // alignment bytes, and before one that would take bits of whatever follows.
        let end = aligned.len() * 8 / 6;
        forms.push(Form::Base64(encoded[skip..end].to_vec()));
    }
    forms
}

impl Form {
    /// The most input bytes a match can span.
    pub(super) fn longest(&self) -> usize {
        match self {
            Self::Escaped(value) => value.len() * LONGEST_ESCAPE,
            Self::Hex(digits) | Self::Base64(digits) => digits.len(),
        }
    }

    /// Whether a match can start with `byte`.
    pub(super) fn may_start(&self, byte: u8) -> bool {
        match self {
            Self::Escaped(value) => value.first().is_some_and(|&first| {
                byte == first || byte == b'%' || byte == b'\\' || (first == b' ' && byte == b'+')
            }),
            Self::Hex(digits) => digits
                .first()
                .is_some_and(|first| first.eq_ignore_ascii_case(&byte)),
            Self::Base64(characters) => characters
                .first()
                .is_some_and(|&first| first == url_to_standard(byte)),
        }
    }

    /// The length of the match at the start of `input`, if there is one.
    pub(super) fn match_at(&self, input: &[u8]) -> Option<usize> {
        match self {
            Self::Escaped(value) => escaped(value, input),
            Self::Hex(digits) => input
                .get(..digits.len())
                .filter(|candidate| candidate.eq_ignore_ascii_case(digits))
                .map(<[u8]>::len),
            Self::Base64(characters) => input
                .get(..characters.len())
                .filter(|candidate| {
                    candidate
                        .iter()
                        .zip(characters)
                        .all(|(&got, &wanted)| url_to_standard(got) == wanted)
                })
                .map(<[u8]>::len),
        }
    }
}

/// The URL-safe base64 characters as their standard counterparts; others unchanged.
fn url_to_standard(byte: u8) -> u8 {
    match byte {
        b'-' => b'+',
        b'_' => b'/',
        other => other,
    }
}

/// The length of `value` spelled at the start of `input` with any of its bytes escaped. Where
/// a byte can be read more than one way (a `%` that is itself part of the value), each reading
/// is tried.
fn escaped(value: &[u8], input: &[u8]) -> Option<usize> {
    let mut consumed = 0;
    for (index, &byte) in value.iter().enumerate() {
        let rest = &input[consumed..];
        let lengths: Vec<usize> = spellings(byte, rest).into_iter().flatten().collect();
        match lengths.as_slice() {
            [] => return None,
            [length] => consumed += length,
            several => {
                return several.iter().find_map(|&length| {
                    escaped(&value[index + 1..], &rest[length..])
                        .map(|tail| consumed + length + tail)
                });
            }
        }
    }
    Some(consumed)
}

/// The lengths of the spellings of `byte` that `rest` starts with: itself, `+` for a space,
/// `%XX`, `\uXXXX` (ASCII only), or a backslash before `"`, `\` or `/`.
fn spellings(byte: u8, rest: &[u8]) -> [Option<usize>; 4] {
    let itself =
        (rest.first() == Some(&byte) || (byte == b' ' && rest.first() == Some(&b'+'))).then_some(1);
    let percent = (rest.first() == Some(&b'%')
        && hex_value(rest.get(1..3)) == Some(u32::from(byte)))
    .then_some(3);
    let unicode = (byte.is_ascii()
        && rest.starts_with(b"\\u")
        && hex_value(rest.get(2..6)) == Some(u32::from(byte)))
    .then_some(6);
    let backslash = (matches!(byte, b'"' | b'\\' | b'/')
        && rest.first() == Some(&b'\\')
        && rest.get(1) == Some(&byte))
    .then_some(2);
    [itself, percent, unicode, backslash]
}

/// The number written by the hex digits `digits` (either case); `None` if any is not one.
fn hex_value(digits: Option<&[u8]>) -> Option<u32> {
    digits?.iter().try_fold(0_u32, |number, &digit| {
        Some(number * 16 + char::from(digit).to_digit(16)?)
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};

    use super::{Form, of};

    const SECRET: &[u8] = b"Bearer s3cr/t+value?";

    /// Whether some form of `SECRET` matches somewhere in `text`, and where it ends.
    fn found(text: &[u8]) -> bool {
        let forms = of(SECRET);
        (0..text.len()).any(|start| {
            forms
                .iter()
                .any(|form| form.may_start(text[start]) && form.match_at(&text[start..]).is_some())
        })
    }

    #[test]
    fn base64_is_found_at_every_alignment_in_both_alphabets_padded_or_not() {
        for prefix in ["", "x", "xy", "xyz", "Authorization: "] {
            for suffix in ["", "!", "!!", "!!!"] {
                let whole = [prefix.as_bytes(), SECRET, suffix.as_bytes()].concat();
                for encoded in [
                    STANDARD.encode(&whole),
                    URL_SAFE.encode(&whole),
                    URL_SAFE_NO_PAD.encode(&whole),
                ] {
                    assert!(found(encoded.as_bytes()), "{prefix:?} {suffix:?} {encoded}");
                }
            }
        }
        assert!(!found(STANDARD.encode(b"Bearer s3cr/t+valuE?").as_bytes()));
    }

    #[test]
    fn hex_and_escapes_are_found_in_any_case_and_mix() {
        let hex: String = SECRET.iter().map(|byte| format!("{byte:02X}")).collect();
        assert!(found(hex.as_bytes()));
        assert!(found(hex.to_lowercase().as_bytes()));
        let json_escaped: String = SECRET.iter().map(|byte| format!("\\u{byte:04x}")).collect();
        assert!(found(json_escaped.as_bytes()));
        assert!(found(br"Bearer s3cr\/t+value?"));
        assert!(found(b"Bearer%20s3cr%2Ft%2Bvalue%3F"));
        assert!(found(b"Bearer+s3cr%2ft%2bvalue%3f"));
        assert!(found(b"%42earer s3cr\\u002Ft+valu\\u0065?"));
        assert!(!found(b"Bearer s3cr%2Ft+valu"));
    }

    #[test]
    fn a_percent_in_the_value_is_read_both_ways() {
        let forms = of(b"a%25b%cdefgh");
        let Form::Escaped(_) = &forms[0] else {
            panic!("{forms:?}")
        };
        assert_eq!(forms[0].match_at(b"a%25b%cdefgh"), Some(12));
        assert_eq!(forms[0].match_at(b"a%2525b%25cdefgh!"), Some(16));
        assert_eq!(forms[0].match_at(b"a%25b%cdefgX"), None);
    }
}
