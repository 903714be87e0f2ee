//! Reading a server-sent event stream from bytes as they arrive: `data:` lines joined per
//! event, comments and other fields skipped, a line longer than [`MAX_LINE`] refused.

/// The longest line held while waiting for its end. An upstream chunk is one JSON object of a
/// few hundred bytes; a megabyte without a newline is not an event stream.
pub const MAX_LINE: usize = 1 << 20;

/// One complete event's data, or the stream's end marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEvent {
    Data(String),
    /// `data: [DONE]`, OpenAI's end of stream.
    Done,
}

/// Why the bytes are not an event stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event-stream line exceeds {MAX_LINE} bytes")]
    LineTooLong,
    #[error("the event stream is not UTF-8")]
    NotUtf8,
}

/// Incremental event-stream reader: `feed` bytes, get the events they complete.
#[derive(Debug, Default)]
pub struct SseReader {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// `data:` lines of the current event, joined by `\n`.
    data: Option<String>,
}

impl SseReader {
    pub fn new() -> SseReader {
        SseReader::default()
    }

    /// Appends `bytes` and returns the events they completed, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..nl]);
            rest = &rest[nl + 1..];
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line_done(&line, &mut out)?;
        }
        if self.line.len() + rest.len() > MAX_LINE {
            return Err(SseError::LineTooLong);
        }
        self.line.extend_from_slice(rest);
        Ok(out)
    }

    /// The stream ended: an event whose blank line never came is still delivered.
    pub fn finish(&mut self) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, &mut out)?;
        }
        self.dispatch(&mut out);
        Ok(out)
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
        if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        // Comments (`:`), `event:`, `id:` and `retry:` carry nothing an OpenAI stream needs.
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if let Some(data) = self.data.take() {
            out.push(if data.trim() == "[DONE]" {
                SseEvent::Done
            } else {
                SseEvent::Data(data)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &[u8]) -> Vec<SseEvent> {
        let mut r = SseReader::new();
        let mut out = r.feed(input).expect("valid");
        out.extend(r.finish().expect("valid"));
        out
    }

    #[test]
    fn split_points_do_not_change_the_events() {
        let input = b": keep-alive\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: one\ndata: two\n\ndata: [DONE]\n\n";
        let whole = events(input);
        assert_eq!(
            whole,
            vec![
                SseEvent::Data("{\"a\":1}".into()),
                SseEvent::Data("one\ntwo".into()),
                SseEvent::Done
            ]
        );
        for cut in 0..input.len() {
            let mut r = SseReader::new();
            let mut out = r.feed(&input[..cut]).expect("valid");
            out.extend(r.feed(&input[cut..]).expect("valid"));
            out.extend(r.finish().expect("valid"));
            assert_eq!(out, whole, "split at {cut}");
        }
    }

    #[test]
    fn an_unterminated_event_is_delivered_at_the_end_and_long_lines_are_refused() {
        assert_eq!(events(b"data: x"), vec![SseEvent::Data("x".into())]);
        let mut r = SseReader::new();
        assert_eq!(
            r.feed(&vec![b'a'; MAX_LINE + 1]),
            Err(SseError::LineTooLong)
        );
        let mut r = SseReader::new();
        assert_eq!(r.feed(b"data: \xff\n"), Err(SseError::NotUtf8));
    }
}
