//! A push parser for one lenient JSON value that builds a [`serde_json::Value`] and, when asked,
//! re-serialises it compactly as it goes, so a string can stream before it closes.
//!
//! Lenient means: Python-literal spellings (single-quoted strings, `True`/`False`/`None`, a
//! trailing comma) are accepted and flagged, and raw control characters inside strings are
//! accepted (they are unambiguous). Everything else that is not JSON is an error.
//!
//! The compact form is byte-for-byte what `serde_json::to_string` prints for the finished value
//! (with `preserve_order`): strings escaped the same way, numbers normalised through serde_json.
//! Each character is looked at once; nothing is re-parsed.

use serde_json::{Map, Value};

/// Containers nested deeper than this are an error rather than a stack that grows with input.
/// Tool arguments are shallow; the cap also bounds how long an unwrapped candidate built of
/// nested look-alike lines is held before it is rejected and its lines are scanned again.
pub const MAX_DEPTH: usize = 32;

/// Why a value could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonError {
    /// Not well-formed (lenient) JSON.
    Invalid,
    /// Ended (end of stream) before it was complete, and more than closing brackets is missing.
    Truncated,
}

/// What a pushed character did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push {
    /// The value goes on.
    More,
    /// The value is complete; the character was part of it.
    Complete,
    /// The value was complete before this character (a number or bare word ends at the first
    /// byte that cannot continue it); the caller must look at the character again.
    CompleteBefore,
}

#[derive(Debug)]
enum Frame {
    Object {
        map: Map<String, Value>,
        key: Option<String>,
        st: ObjSt,
    },
    Array {
        items: Vec<Value>,
        st: ArrSt,
        /// `]`, or `)` for a Python tuple (read as a JSON array).
        end: char,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ObjSt {
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,`: a key, or `}` (a Python trailing comma).
    Key,
    Colon,
    Value,
    CommaOrEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrSt {
    ValueOrEnd,
    Value,
    CommaOrEnd,
}

#[derive(Debug)]
enum Esc {
    None,
    Backslash,
    Unicode {
        digits: u8,
        acc: u32,
    },
    /// A high surrogate was read; a `\` must follow.
    LowBackslash {
        high: u32,
    },
    /// ... then `u`.
    LowU {
        high: u32,
    },
    LowUnicode {
        high: u32,
        digits: u8,
        acc: u32,
    },
}

#[derive(Debug)]
enum Lex {
    /// Between tokens.
    Idle,
    Str {
        quote: char,
        buf: String,
        esc: Esc,
        key: bool,
    },
    Num(String),
    Word(String),
}

/// One lenient JSON value being parsed.
#[derive(Debug)]
pub struct ValueParser {
    stack: Vec<Frame>,
    lex: Lex,
    root: Option<Value>,
    /// Emit the compact form into `out` as the value is read.
    emit: bool,
    out: String,
    /// A `,` seen but not yet written: written when the next element starts, so a Python
    /// trailing comma never reaches the output.
    comma_pending: bool,
    /// The value used Python-literal syntax somewhere.
    pub python: bool,
    /// Occurrences of `</tool_call>` inside strings.
    pub close_tags_in_strings: usize,
    close_tag_matched: usize,
    /// Python tuples `(a, b)` are read as arrays (pythonic call arguments).
    tuples: bool,
}

const CLOSE_TAG: &[u8] = b"</tool_call>";

impl ValueParser {
    pub fn new(emit: bool) -> ValueParser {
        ValueParser {
            stack: Vec::new(),
            lex: Lex::Idle,
            root: None,
            emit,
            out: String::new(),
            comma_pending: false,
            python: false,
            close_tags_in_strings: 0,
            close_tag_matched: 0,
            tuples: false,
        }
    }

    /// A parser for one Python literal argument value: as [`ValueParser::new`], and a tuple
    /// `(a, b)` is read as the array `[a, b]` (a parenthesised single value without a comma
    /// is an expression, not a tuple, and is invalid).
    pub fn python_literal() -> ValueParser {
        ValueParser {
            tuples: true,
            ..ValueParser::new(false)
        }
    }

    /// The compact text produced since the last call.
    pub fn take_out(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// Moves the compact text produced since the last call onto `dst`, keeping this parser's
    /// buffer (and its capacity) for the next character.
    pub fn drain_out_into(&mut self, dst: &mut String) {
        dst.push_str(&self.out);
        self.out.clear();
    }

    /// True before the first non-whitespace character.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty() && matches!(self.lex, Lex::Idle) && self.root.is_none()
    }

    /// The finished value (after `Complete`/`CompleteBefore`).
    pub fn take_value(&mut self) -> Option<Value> {
        self.root.take()
    }

    /// True when the first character started a string.
    pub fn is_string(&self) -> bool {
        self.stack.is_empty() && matches!(self.lex, Lex::Str { .. })
    }

    pub fn push(&mut self, c: char) -> Result<Push, JsonError> {
        match &mut self.lex {
            Lex::Str { .. } => return self.push_str(c),
            Lex::Num(buf) => {
                if c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-') {
                    buf.push(c);
                    if buf.len() > 64 {
                        return Err(JsonError::Invalid);
                    }
                    return Ok(Push::More);
                }
                let buf = std::mem::take(buf);
                self.lex = Lex::Idle;
                let v: Value = serde_json::from_str(&buf).map_err(|_| JsonError::Invalid)?;
                if !v.is_number() {
                    return Err(JsonError::Invalid);
                }
                if self.value_done(v)? {
                    return Ok(Push::CompleteBefore);
                }
                // Fall through: the delimiter is structure for the parent.
            }
            Lex::Word(buf) => {
                if c.is_ascii_alphabetic() {
                    buf.push(c);
                    if buf.len() > 5 {
                        return Err(JsonError::Invalid);
                    }
                    return Ok(Push::More);
                }
                let buf = std::mem::take(buf);
                self.lex = Lex::Idle;
                let v = self.word(&buf)?;
                if self.value_done(v)? {
                    return Ok(Push::CompleteBefore);
                }
            }
            Lex::Idle => {}
        }
        self.push_structure(c)
    }

    fn word(&mut self, w: &str) -> Result<Value, JsonError> {
        Ok(match w {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            "True" | "False" | "None" => {
                self.python = true;
                match w {
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            _ => return Err(JsonError::Invalid),
        })
    }

    fn push_structure(&mut self, c: char) -> Result<Push, JsonError> {
        if c.is_whitespace() {
            return Ok(Push::More);
        }
        if self.root.is_some() {
            return Err(JsonError::Invalid);
        }
        // What the innermost container expects decides what `c` may be.
        enum Want {
            Value,
            ValueOrEnd(char),
            Key { end_ok: bool },
            Colon,
            CommaOrEnd(char),
        }
        let want = match self.stack.last() {
            None => Want::Value,
            Some(Frame::Object { st, .. }) => match st {
                ObjSt::KeyOrEnd => Want::Key { end_ok: true },
                ObjSt::Key => Want::Key { end_ok: true },
                ObjSt::Colon => Want::Colon,
                ObjSt::Value => Want::Value,
                ObjSt::CommaOrEnd => Want::CommaOrEnd('}'),
            },
            Some(Frame::Array { st, end, .. }) => match st {
                ArrSt::ValueOrEnd | ArrSt::Value => Want::ValueOrEnd(*end),
                ArrSt::CommaOrEnd => Want::CommaOrEnd(*end),
            },
        };
        match want {
            Want::Key { end_ok } => {
                if c == '}' && end_ok {
                    if matches!(
                        self.stack.last(),
                        Some(Frame::Object { st: ObjSt::Key, .. })
                    ) {
                        self.python = true;
                        self.comma_pending = false;
                    }
                    return self.close();
                }
                if c == '"' || c == '\'' {
                    if c == '\'' {
                        self.python = true;
                    }
                    self.lex = Lex::Str {
                        quote: c,
                        buf: String::new(),
                        esc: Esc::None,
                        key: true,
                    };
                    return Ok(Push::More);
                }
                Err(JsonError::Invalid)
            }
            Want::Colon => {
                if c != ':' {
                    return Err(JsonError::Invalid);
                }
                if let Some(Frame::Object { st, .. }) = self.stack.last_mut() {
                    *st = ObjSt::Value;
                }
                if self.emit {
                    self.out.push(':');
                }
                Ok(Push::More)
            }
            Want::CommaOrEnd(end) => {
                if c == end {
                    return self.close();
                }
                if c != ',' {
                    return Err(JsonError::Invalid);
                }
                match self.stack.last_mut() {
                    Some(Frame::Object { st, .. }) => *st = ObjSt::Key,
                    Some(Frame::Array { st, .. }) => *st = ArrSt::Value,
                    None => return Err(JsonError::Invalid),
                }
                self.comma_pending = true;
                Ok(Push::More)
            }
            Want::ValueOrEnd(end) if c == end => {
                if matches!(
                    self.stack.last(),
                    Some(Frame::Array {
                        st: ArrSt::Value,
                        ..
                    })
                ) {
                    self.python = true;
                    self.comma_pending = false;
                }
                self.close()
            }
            Want::Value | Want::ValueOrEnd(_) => self.start_value(c),
        }
    }

    fn write_comma(&mut self) {
        if self.comma_pending {
            self.comma_pending = false;
            if self.emit {
                self.out.push(',');
            }
        }
    }

    fn start_value(&mut self, c: char) -> Result<Push, JsonError> {
        match c {
            '{' | '[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(JsonError::Invalid);
                }
                self.write_comma();
                if self.emit {
                    self.out.push(c);
                }
                self.stack.push(if c == '{' {
                    Frame::Object {
                        map: Map::new(),
                        key: None,
                        st: ObjSt::KeyOrEnd,
                    }
                } else {
                    Frame::Array {
                        items: Vec::new(),
                        st: ArrSt::ValueOrEnd,
                        end: ']',
                    }
                });
                Ok(Push::More)
            }
            '(' if self.tuples => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(JsonError::Invalid);
                }
                self.write_comma();
                self.python = true;
                if self.emit {
                    self.out.push('[');
                }
                self.stack.push(Frame::Array {
                    items: Vec::new(),
                    st: ArrSt::ValueOrEnd,
                    end: ')',
                });
                Ok(Push::More)
            }
            '"' | '\'' => {
                if c == '\'' {
                    self.python = true;
                }
                self.write_comma();
                if self.emit {
                    self.out.push('"');
                }
                self.lex = Lex::Str {
                    quote: c,
                    buf: String::new(),
                    esc: Esc::None,
                    key: false,
                };
                Ok(Push::More)
            }
            '-' | '0'..='9' => {
                self.write_comma();
                self.lex = Lex::Num(c.to_string());
                Ok(Push::More)
            }
            'a'..='z' | 'A'..='Z' => {
                self.write_comma();
                self.lex = Lex::Word(c.to_string());
                Ok(Push::More)
            }
            _ => Err(JsonError::Invalid),
        }
    }

    fn close(&mut self) -> Result<Push, JsonError> {
        let Some(frame) = self.stack.pop() else {
            return Err(JsonError::Invalid);
        };
        let (v, ch) = match frame {
            Frame::Object { map, .. } => (Value::Object(map), '}'),
            // `(x)` is a parenthesised expression: only a comma makes a tuple.
            Frame::Array {
                items,
                st: ArrSt::CommaOrEnd,
                end: ')',
            } if items.len() == 1 => return Err(JsonError::Invalid),
            Frame::Array { items, .. } => (Value::Array(items), ']'),
        };
        if self.emit {
            self.out.push(ch);
        }
        if self.value_done(v)? {
            Ok(Push::Complete)
        } else {
            Ok(Push::More)
        }
    }

    /// Attaches a finished value to its container; true when it was the root.
    fn value_done(&mut self, v: Value) -> Result<bool, JsonError> {
        if self.emit {
            match &v {
                Value::Number(_) | Value::Bool(_) | Value::Null => {
                    self.out.push_str(&v.to_string());
                }
                _ => {}
            }
        }
        match self.stack.last_mut() {
            None => {
                self.root = Some(v);
                Ok(true)
            }
            Some(Frame::Object { map, key, st }) => {
                let k = key.take().ok_or(JsonError::Invalid)?;
                if map.contains_key(&k) {
                    // A duplicate key would make the streamed text disagree with the value.
                    return Err(JsonError::Invalid);
                }
                map.insert(k, v);
                *st = ObjSt::CommaOrEnd;
                Ok(false)
            }
            Some(Frame::Array { items, st, .. }) => {
                items.push(v);
                *st = ArrSt::CommaOrEnd;
                Ok(false)
            }
        }
    }

    fn push_str(&mut self, c: char) -> Result<Push, JsonError> {
        let Lex::Str {
            quote,
            buf,
            esc,
            key,
        } = &mut self.lex
        else {
            return Err(JsonError::Invalid);
        };
        let decoded: Option<char> = match esc {
            Esc::None => {
                if c == *quote {
                    let text = std::mem::take(buf);
                    let is_key = *key;
                    self.lex = Lex::Idle;
                    self.close_tag_matched = 0;
                    return self.string_done(text, is_key);
                }
                if c == '\\' {
                    *esc = Esc::Backslash;
                    None
                } else {
                    Some(c)
                }
            }
            Esc::Backslash => {
                *esc = Esc::None;
                match c {
                    '"' => Some('"'),
                    '\'' => Some('\''),
                    '\\' => Some('\\'),
                    '/' => Some('/'),
                    'b' => Some('\u{8}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'u' => {
                        *esc = Esc::Unicode { digits: 0, acc: 0 };
                        None
                    }
                    _ => return Err(JsonError::Invalid),
                }
            }
            Esc::Unicode { digits, acc } => {
                let d = c.to_digit(16).ok_or(JsonError::Invalid)?;
                *acc = *acc * 16 + d;
                *digits += 1;
                if *digits < 4 {
                    None
                } else {
                    let cp = *acc;
                    if (0xD800..0xDC00).contains(&cp) {
                        *esc = Esc::LowBackslash { high: cp };
                        None
                    } else {
                        *esc = Esc::None;
                        Some(char::from_u32(cp).ok_or(JsonError::Invalid)?)
                    }
                }
            }
            Esc::LowBackslash { high } => {
                if c != '\\' {
                    return Err(JsonError::Invalid);
                }
                *esc = Esc::LowU { high: *high };
                None
            }
            Esc::LowU { high } => {
                if c != 'u' {
                    return Err(JsonError::Invalid);
                }
                *esc = Esc::LowUnicode {
                    high: *high,
                    digits: 0,
                    acc: 0,
                };
                None
            }
            Esc::LowUnicode { high, digits, acc } => {
                let d = c.to_digit(16).ok_or(JsonError::Invalid)?;
                *acc = *acc * 16 + d;
                *digits += 1;
                if *digits < 4 {
                    None
                } else {
                    let low = *acc;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(JsonError::Invalid);
                    }
                    let cp = 0x10000 + ((*high - 0xD800) << 10) + (low - 0xDC00);
                    *esc = Esc::None;
                    Some(char::from_u32(cp).ok_or(JsonError::Invalid)?)
                }
            }
        };
        if let Some(d) = decoded {
            buf.push(d);
            if self.emit && !*key {
                // The string's contents so far are final: stream them escaped.
                escape_into(&mut self.out, d);
            }
            self.track_close_tag(d);
        }
        Ok(Push::More)
    }

    fn track_close_tag(&mut self, d: char) {
        let want = CLOSE_TAG[self.close_tag_matched];
        if d as u32 == u32::from(want) {
            self.close_tag_matched += 1;
            if self.close_tag_matched == CLOSE_TAG.len() {
                self.close_tags_in_strings += 1;
                self.close_tag_matched = 0;
            }
        } else {
            self.close_tag_matched = usize::from(d == '<');
        }
    }

    fn string_done(&mut self, text: String, is_key: bool) -> Result<Push, JsonError> {
        if is_key {
            if let Some(Frame::Object { key, st, .. }) = self.stack.last_mut() {
                *key = Some(text.clone());
                *st = ObjSt::Colon;
            }
            self.write_comma();
            if self.emit {
                self.out.push('"');
                for ch in text.chars() {
                    escape_into(&mut self.out, ch);
                }
                self.out.push('"');
            }
            return Ok(Push::More);
        }
        if self.emit {
            // The contents already streamed; only the closing quote is left.
            self.out.push('"');
        }
        let v = Value::String(text);
        if self.value_done(v)? {
            Ok(Push::Complete)
        } else {
            Ok(Push::More)
        }
    }

    /// End of input. Closes what is open if only closing brackets are missing; returns the
    /// number of brackets it added (0: the value was complete).
    pub fn finish(&mut self) -> Result<usize, JsonError> {
        if self.root.is_some() {
            return Ok(0);
        }
        match std::mem::replace(&mut self.lex, Lex::Idle) {
            Lex::Idle => {}
            Lex::Str { .. } => return Err(JsonError::Truncated),
            // A number at the end could have been cut mid-digits; a word is checked whole.
            Lex::Num(_) => return Err(JsonError::Truncated),
            Lex::Word(w) => {
                let v = self.word(&w).map_err(|_| JsonError::Truncated)?;
                if self.value_done(v)? {
                    return Ok(0);
                }
            }
        }
        if self.stack.is_empty() {
            return Err(JsonError::Truncated);
        }
        let closable = self.stack.iter().all(|f| match f {
            Frame::Object { st, .. } => matches!(st, ObjSt::KeyOrEnd | ObjSt::CommaOrEnd),
            Frame::Array { st, .. } => matches!(st, ArrSt::ValueOrEnd | ArrSt::CommaOrEnd),
        });
        if !closable {
            return Err(JsonError::Truncated);
        }
        let mut n = 0;
        while !self.stack.is_empty() {
            n += 1;
            if self.close()? == Push::Complete {
                break;
            }
        }
        Ok(n)
    }
}

/// Appends `c` as serde_json writes it inside a string.
pub fn escape_into(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        c if (c as u32) < 0x20 => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let b = c as u32 as usize;
            out.push_str("\\u00");
            out.push(char::from(HEX[b >> 4]));
            out.push(char::from(HEX[b & 0xF]));
        }
        c => out.push(c),
    }
}

/// Parses a whole string as one lenient JSON value (used for arguments written as a string and
/// for Qwen3 XML parameter values). Trailing whitespace is allowed, anything else is not.
pub fn parse_whole(s: &str) -> Result<(Value, bool), JsonError> {
    let mut p = ValueParser::new(false);
    let mut done = false;
    for c in s.chars() {
        if done {
            if c.is_whitespace() {
                continue;
            }
            return Err(JsonError::Invalid);
        }
        match p.push(c)? {
            Push::More => {}
            Push::Complete => done = true,
            Push::CompleteBefore => {
                done = true;
                if !c.is_whitespace() {
                    return Err(JsonError::Invalid);
                }
            }
        }
    }
    if !done {
        // A number or word at the very end is whole here: the input is complete.
        if p.push(' ')? == Push::More && p.finish()? != 0 {
            return Err(JsonError::Truncated);
        }
    }
    let python = p.python;
    p.take_value()
        .map(|v| (v, python))
        .ok_or(JsonError::Invalid)
}
