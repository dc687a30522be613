//! Incremental Server-Sent Events decoding over a byte stream.

/// One decoded event: its `event:` name (if any) and its joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// The longest line a stream may send while its reply is capped at `cap` bytes of text: the
/// text escaped as JSON (at most six bytes a byte) and the event around it. A longer line
/// holds more than the cap allows, so reading stops before it is all in memory.
pub fn line_limit(cap: usize) -> usize {
    cap.saturating_mul(6).saturating_add(64 * 1024)
}

/// Feeds bytes in any chunking; yields complete events. Linear in the input however it is cut:
/// each byte is searched for a line end once, and consumed lines leave the buffer in one move.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no line end.
    scanned: usize,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held that are not yet a whole line.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        // Taken out while its lines are read in place (no copy unless a line is not UTF-8),
        // and put back with its capacity.
        let buffer = std::mem::take(&mut self.buffer);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buffer[self.scanned.max(start)..]) {
            let end = self.scanned.max(start) + offset;
            let mut line = &buffer[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            start = end + 1;
            if let Some(event) = self.line(&String::from_utf8_lossy(line)) {
                events.push(event);
            }
        }
        self.buffer = buffer;
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        events
    }

    /// Flushes an event left without a closing blank line when the stream ends.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.buffer.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
            self.scanned = 0;
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
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        if self.data.is_empty() {
            self.event = None;
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent {
            event: self.event.take(),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_crlf() {
        let mut decoder = SseDecoder::new();
        let mut events = decoder.feed(b"event: ping\r\ndata: {\"a\"");
        assert!(events.is_empty());
        events.extend(decoder.feed(b":1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\n"));
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: Some("ping".into()),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "x\ny".into()
                }
            ]
        );
    }

    /// A line that never ends, fed in small chunks, is searched for its end once per byte: the
    /// work stays linear in the input (it was quadratic, N7).
    #[test]
    fn a_line_without_end_is_scanned_once() {
        let mut decoder = SseDecoder::new();
        for _ in 0..1000 {
            assert!(decoder.feed(&[b'x'; 1000]).is_empty());
            assert_eq!(decoder.scanned, decoder.buffer.len());
        }
        let events = decoder.feed(b"\ndata: after\n\n");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "after");
        assert!(decoder.buffer.is_empty() && decoder.scanned == 0);
    }

    #[test]
    fn finish_flushes_an_unterminated_event() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.feed(b"data: [DONE]").is_empty());
        assert_eq!(decoder.finish().unwrap().data, "[DONE]");
        assert!(decoder.finish().is_none());
    }
}
