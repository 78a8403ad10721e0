//! "Did you mean …?": the known name closest to a misspelt one.
//!
//! Names are compared case-insensitively with `_` and `-` removed, so `onError`, `pretooluse`
//! and `pre-tool-use` all find their intended spelling. A candidate is close when its edit
//! distance (with transpositions) is small for its length, or when the two names share a
//! long prefix (`pre_tool_use` → `pre_tool_execution`).

/// Names longer than this are not compared (hostile input stays cheap).
const MAX_COMPARED_CHARS: usize = 64;
/// A shared normalised prefix this long makes a candidate close.
const CLOSE_PREFIX: usize = 5;

/// The candidate `word` most likely misspells, if any is close enough.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word = normalise(word);
    if word.is_empty() || word.len() > MAX_COMPARED_CHARS {
        return None;
    }
    candidates
        .into_iter()
        .filter_map(|candidate| {
            let normalised = normalise(candidate);
            let distance = distance(&word, &normalised);
            let prefix = common_prefix(&word, &normalised);
            let limit = (word.len().max(normalised.len()) / 3).max(1);
            (distance <= limit || prefix >= CLOSE_PREFIX).then_some((
                distance,
                usize::MAX - prefix,
                candidate,
            ))
        })
        .min_by_key(|&(distance, prefix_rank, _)| (distance, prefix_rank))
        .map(|(_, _, candidate)| candidate)
}

/// Lower-case ASCII letters and digits of `name`, without separators.
fn normalise(name: &str) -> Vec<char> {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Length of the common prefix of `a` and `b`.
fn common_prefix(a: &[char], b: &[char]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions, transpositions.
fn distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut rows = vec![0; (a.len() + 1) * width];
    for (j, cell) in rows.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        rows[i * width] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[(i - 1) * width + j] + 1)
                .min(rows[i * width + j - 1] + 1)
                .min(rows[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[(i - 2) * width + j - 2] + 1);
            }
            rows[i * width + j] = best;
        }
    }
    rows[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUP: [&str; 3] = ["enabled", "pre_tool_execution", "post_tool_execution"];
    const EVENTS: [&str; 4] = [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
    ];

    #[test]
    fn typos_find_their_name() {
        assert_eq!(did_you_mean("enable", GROUP), Some("enabled"));
        assert_eq!(
            did_you_mean("pre_tool_use", GROUP),
            Some("pre_tool_execution")
        );
        assert_eq!(
            did_you_mean("post_tool_exec", GROUP),
            Some("post_tool_execution")
        );
        assert_eq!(
            did_you_mean("comand", ["command", "timeout"]),
            Some("command")
        );
        assert_eq!(did_you_mean("tpye", ["type", "timeout"]), Some("type"));
        assert_eq!(did_you_mean("onError", ["on_error"]), Some("on_error"));
    }

    #[test]
    fn events_find_their_name() {
        assert_eq!(did_you_mean("pretooluse", EVENTS), Some("PreToolUse"));
        assert_eq!(did_you_mean("PreToolExecution", EVENTS), Some("PreToolUse"));
        assert_eq!(
            did_you_mean("PostToolUseFailed", EVENTS),
            Some("PostToolUseFailure")
        );
    }

    #[test]
    fn unrelated_names_find_nothing() {
        assert_eq!(did_you_mean("permissions", GROUP), None);
        assert_eq!(did_you_mean("", GROUP), None);
        assert_eq!(did_you_mean(&"pre_tool_execution".repeat(10), GROUP), None);
    }

    #[test]
    fn distance_counts_transpositions_once() {
        let chars = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(distance(&chars("abcd"), &chars("abdc")), 1);
        assert_eq!(distance(&chars(""), &chars("abc")), 3);
        assert_eq!(distance(&chars("kitten"), &chars("sitting")), 3);
    }
}
