//! The contract between the prose scanner in [`crate::turn`] and each format's parser.
//!
//! The scanner walks prose and, at candidate positions, asks every enabled [`Format`] whether
//! the bytes there start one of its constructs. Detection is three-valued, like httparse's
//! `Status`: *no*, *need more bytes*, or *yes, here is a body parser*. Formats are designed so
//! that at most one can say yes at any position (their trigger prefixes are disjoint; a test
//! checks this), so the result never depends on the order formats are asked in.
//!
//! Once a [`Body`] is active it consumes bytes until it reports `Done` (the rest of the chunk
//! goes back to prose) or `Reject` (the bytes it held were not its construct after all: they
//! go back to the scanner as prose, minus the trigger, so nothing is lost).

use crate::event::Event;
pub use crate::format_id::FormatId;
use crate::registry::Registry;

/// The most bytes the scanner (and the builtin text bodies) hold before giving up on a
/// candidate with a [`FailureKind::TooLong`](crate::event::FailureKind::TooLong) failure.
pub const MAX_HELD: usize = 1 << 20;

/// Appends prose to `out`, merging it into a trailing `Text` event.
pub(crate) fn push_text(out: &mut Vec<Event>, s: &str) {
    if s.is_empty() {
        return;
    }
    if let Some(Event::Text(t)) = out.last_mut() {
        t.push_str(s);
    } else {
        out.push(Event::Text(s.to_owned()));
    }
}

/// Appends reasoning text to `out`, merging it into a trailing `Reasoning` event.
pub(crate) fn push_reasoning(out: &mut Vec<Event>, s: &str) {
    if s.is_empty() {
        return;
    }
    if let Some(Event::Reasoning(t)) = out.last_mut() {
        t.push_str(s);
    } else {
        out.push(Event::Reasoning(s.to_owned()));
    }
}

/// State shared by all bodies of one turn.
#[derive(Debug)]
pub struct Ctx<'r> {
    pub registry: &'r Registry,
    /// The next call index to hand out (text proposals and native calls share the counter).
    pub next_index: usize,
    /// Path of the last edit/create block, for headerless blocks that follow it.
    pub last_edit_path: Option<String>,
    /// True when the turn decodes in `auto` mode, false in a single-format mode. (In
    /// `Only(Text)` mode the turn decoder itself marks native proposals with
    /// `native_in_text_mode`; bodies need not.)
    pub auto: bool,
    /// The reply has given its answer in a shape plain code also takes: a call was emitted,
    /// or a line or fence held the empty call list `[]` ("no call"). Bare pythonic calls
    /// are not read after it (code in the explanation shows calls, it does not make them).
    pub answered: bool,
    /// The reply has attempted a call that did not become one: a construct failed, or a bare
    /// pythonic call to a declared tool had arguments that are not literals. A bare call with
    /// expression arguments is a named failure only as the reply's one attempt.
    pub attempted: bool,
}

impl Ctx<'_> {
    pub fn take_index(&mut self) -> usize {
        let i = self.next_index;
        self.next_index += 1;
        i
    }
}

/// The answer of [`Format::detect`] at one candidate position.
pub enum Detect {
    /// These bytes do not start this format's construct.
    No,
    /// Could start it; show me more bytes (or the end of stream).
    NeedMore,
    /// They do: `body` takes over from the candidate position (it will be fed from there,
    /// trigger included).
    Start(Box<dyn Body>),
}

impl std::fmt::Debug for Detect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Detect::No => f.write_str("No"),
            Detect::NeedMore => f.write_str("NeedMore"),
            Detect::Start(_) => f.write_str("Start(..)"),
        }
    }
}

/// Where a candidate sits, which decides which triggers may apply there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The candidate is the first byte of a line (or of the stream).
    pub line_start: bool,
    /// No more bytes will come: answer `No` or `Start`, never `NeedMore`.
    pub eos: bool,
    /// Nothing but blanks (and a reasoning block) came before the candidate in this reply,
    /// and no construct started there: the candidate could begin a reply-wide shape.
    pub reply_start: bool,
}

/// One in-band format's detector.
///
/// Trigger ownership (see the table in [`crate::native`]): a line-start ```` ```json ```` fence
/// whose first line opens a call object (`{` then a `name`/`arguments`/`parameters`/`type`
/// key) belongs to bare_json, not to the text protocol's fences; the text protocol answers
/// `No` wherever `native::bare_json::fence_detect` answers `Start` or `NeedMore`.
pub trait Format: std::fmt::Debug + Send {
    fn id(&self) -> FormatId;
    /// Bytes that can begin a trigger of this format, for the scanner's fast skip. A
    /// format whose triggers only apply at line start returns them in `line_start_bytes`.
    fn trigger_bytes(&self) -> &'static [u8];
    fn line_start_bytes(&self) -> &'static [u8];
    /// Whether a line starting with `b` (one of `line_start_bytes`) is offered to this format
    /// in a turn decoded with `registry`. By default it always is; a format whose line-start
    /// trigger is a declared tool's name narrows it to those names' first letters, so lines of
    /// prose are not offered to it.
    fn line_start_applies(&self, _b: u8, _registry: &Registry) -> bool {
        true
    }
    /// `s` is everything held from the candidate position on (at least one byte).
    fn detect(&self, s: &str, at: Position, ctx: &Ctx<'_>) -> Detect;
}

/// How an active body stands after a `feed`.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Consumed all of the input; the construct goes on.
    NeedMore,
    /// The construct ended after `consumed` bytes of this input; the rest is prose again.
    Done { consumed: usize },
    /// Not this construct after all. `held` is every byte the body consumed since it
    /// started (trigger included) that it has not emitted; `rest` is how much of this
    /// input it did not look at. The scanner re-reads `held` as prose, skipping the first
    /// trigger byte so it cannot re-detect the same construct.
    Reject { held: String, rest: usize },
    /// The construct ended, but the body had already consumed bytes after its end (a bounded
    /// look-ahead for an optional closing tag or fence that did not come). `held` goes back to
    /// the scanner as prose and is scanned normally, nothing skipped (its first byte is a line
    /// start iff `line_start`), followed by the last `rest` bytes of this input. Added by the
    /// native-codec helper: `Done { consumed }` cannot give back bytes from earlier inputs.
    Ended {
        held: String,
        line_start: bool,
        rest: usize,
    },
}

/// A format construct being parsed. Emits `ToolCallStart`/`ArgsDelta` as soon as they are
/// certain, and exactly one `Proposal` or `Failure` per construct it accepts. A body may also
/// emit `Text` for bytes it consumed that turned out to be prose (the text protocol passes a
/// code fence's contents through this way).
pub trait Body: std::fmt::Debug + Send {
    fn feed(&mut self, s: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Step;
    /// End of stream inside the construct: close it (repair) or fail it; or reject it, in
    /// which case the returned string is handed back to the scanner as prose.
    ///
    /// Native bodies also return `Some` after closing a call when they hold look-ahead bytes
    /// that followed it (as in [`Step::Ended`]); such a string never starts with a trigger of
    /// the body's own format, so the scanner may scan it from its first byte.
    fn finish(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Option<String>;
}
