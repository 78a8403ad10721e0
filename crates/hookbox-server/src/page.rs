//! Cursor pagination: `page_size` and an opaque `page_token` (the offset of the next item).

use crate::error::ApiError;

/// One page's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Page {
    /// Index of the first item.
    pub(crate) start: usize,
    /// Most items returned.
    pub(crate) size: usize,
}

/// Prefix of page tokens, so a token from another list is recognisable as foreign.
const TOKEN_PREFIX: &str = "p";

impl Page {
    /// The page `page_size`/`page_token` ask for; a missing or 0 size means `default`, larger
    /// than `max` means `max`.
    pub(crate) fn parse(
        page_size: Option<&str>,
        page_token: Option<&str>,
        default: usize,
        max: usize,
    ) -> Result<Self, ApiError> {
        let size = match page_size.filter(|text| !text.is_empty()) {
            None => default,
            Some(text) => match text.parse::<i64>() {
                Ok(0) => default,
                Ok(size) if size > 0 => usize::try_from(size).unwrap_or(max).min(max),
                _ => {
                    return Err(ApiError::invalid(format!(
                        "`page_size` must be a positive integer, got `{text}`"
                    )));
                }
            },
        };
        let start = match page_token.filter(|text| !text.is_empty()) {
            None => 0,
            Some(token) => token
                .strip_prefix(TOKEN_PREFIX)
                .and_then(|offset| offset.parse::<usize>().ok())
                .ok_or_else(|| {
                    ApiError::invalid(format!(
                        "`page_token` `{token}` is not a token this list returned; pass the \
                         `next_page_token` of the previous page, or none for the first page"
                    ))
                })?,
        };
        Ok(Self { start, size })
    }

    /// This page of `items` and the token of the next page (`None` on the last).
    pub(crate) fn take<T>(self, items: Vec<T>) -> (Vec<T>, Option<String>) {
        let total = items.len();
        let end = self.start.saturating_add(self.size).min(total);
        let next = (end < total).then(|| format!("{TOKEN_PREFIX}{end}"));
        let page = items
            .into_iter()
            .skip(self.start)
            .take(end.saturating_sub(self.start));
        (page.collect(), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_walk_the_list() {
        let page = Page::parse(Some("2"), None, 10, 100).unwrap();
        let (items, next) = page.take(vec![1, 2, 3]);
        assert_eq!((items, next.as_deref()), (vec![1, 2], Some("p2")));
        let page = Page::parse(Some("2"), Some("p2"), 10, 100).unwrap();
        assert_eq!(page.take(vec![1, 2, 3]), (vec![3], None));
        assert!(Page::parse(Some("-1"), None, 10, 100).is_err());
        assert!(Page::parse(None, Some("abc"), 10, 100).is_err());
    }
}
