//! A server-sent events decoder (the `text/event-stream` framing all three providers stream in).

/// One dispatched event: its `event:` type, if any, and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
}

/// Turns body chunks into events; chunks may split lines and events anywhere.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// Feeds one chunk and returns the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches('\n').trim_end_matches('\r');
            if let Some(event) = self.line(line) {
                events.push(event);
            }
        }
        events
    }

    /// Ends the stream: an event not yet closed by a blank line is dispatched anyway.
    pub(crate) fn finish(mut self) -> Option<SseEvent> {
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            let rest = String::from_utf8_lossy(&rest).into_owned();
            if let Some(event) = self.line(rest.trim_end_matches('\r')) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        self.data.take().map(|data| SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::{SseDecoder, SseEvent};

    fn event(kind: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: kind.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn decodes_events_split_across_chunks() {
        let mut decoder = SseDecoder::default();
        let mut events = decoder.push(b": comment\r\nevent: a\r\ndata: {\"x\"");
        assert!(events.is_empty());
        events.extend(decoder.push(b":1}\r\n\r\ndata: one\ndata:two\n\nevent: lonely\n\n"));
        events.extend(decoder.push(b"data: [DONE]"));
        events.extend(decoder.finish());
        assert_eq!(
            events,
            [
                event(Some("a"), "{\"x\":1}"),
                event(None, "one\ntwo"),
                event(None, "[DONE]"),
            ]
        );
    }
}
