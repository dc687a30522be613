//! Incremental Server-Sent Events decoding over a byte stream, and the read of a provider's
//! streamed reply that both HTTP clients share (idle timeout, the reply cap, cut streams);
//! each client only says what one event means.

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

/// What a provider's stream reader makes of one event.
pub enum Seen {
    /// Nothing to add to the reply's text.
    Nothing,
    /// A piece of the reply's text.
    Text(String),
    /// The provider's end-of-reply event: the chunk's other events are read, then the stream
    /// is left.
    Stop,
}

/// A streamed reply as read: its text (at most the cap), whether the cap cut it, whether the
/// provider said it stopped, and a last event the stream did not end with a blank line.
pub struct Streamed {
    pub text: String,
    pub capped: bool,
    pub stopped: bool,
    pub unfinished: Option<SseEvent>,
}

/// Reads `response` as SSE, handing each event to `seen`, until the stream ends, a `Stop`
/// event's chunk is read, or the text reaches `cap` bytes (or one line grows past what the cap
/// could need, so it is never all in memory). No byte arrives for `idle`: a timeout.
pub async fn read_reply(
    response: reqwest::Response,
    url: &str,
    idle: std::time::Duration,
    cap: usize,
    on_text: super::provider::TextSink<'_>,
    mut seen: impl FnMut(&SseEvent) -> Result<Seen, super::provider::LlmError>,
) -> Result<Streamed, super::provider::LlmError> {
    use super::provider::{LlmError, push_capped, transport_error};
    use futures_util::StreamExt;
    let mut stream = response.bytes_stream();
    let mut decoder = SseDecoder::new();
    let mut text = String::new();
    let mut stopped = false;
    while !stopped {
        let chunk = match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(LlmError::Timeout(idle)),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(transport_error(url, &e, idle)),
            Ok(Some(Ok(chunk))) => chunk,
        };
        for event in decoder.feed(&chunk) {
            match seen(&event)? {
                Seen::Nothing => {}
                Seen::Stop => stopped = true,
                Seen::Text(piece) => {
                    if !piece.is_empty() && push_capped(&mut text, &piece, cap, on_text) {
                        return Ok(Streamed::capped(text));
                    }
                }
            }
        }
        if decoder.pending() > line_limit(cap) {
            return Ok(Streamed::capped(text));
        }
    }
    Ok(Streamed {
        text,
        capped: false,
        stopped,
        unfinished: decoder.finish(),
    })
}

impl Streamed {
    fn capped(text: String) -> Streamed {
        Streamed {
            text,
            capped: true,
            stopped: false,
            unfinished: None,
        }
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
