//! Bare pythonic calls: `f(a=1)` written without the list's brackets, the way models write a
//! call when nobody trained them on a tool format (gorilla-openfunctions, NexusRaven's
//! `f(a=1);`, DeepSeek-Coder and Mistral in a ```` ```python ```` fence, often indented).
//!
//! Code calls functions too, so the shape is a call only when all of this holds:
//!
//! - **Line mode**: a line (after optional indentation) that is nothing but calls, joined by
//!   `,` or `;` (an optional `;` at the end), or an indented `[f(…), g(…)]` list (a list at
//!   column 0 is [`super::pythonic`]'s). Anything else on the line (`f(a=1) returns …`,
//!   `f(x).y`) makes the whole line prose.
//! - **Fence mode**: a ```` ``` ````, ```` ```python ````, ```` ```py ```` or
//!   ```` ```tool_code ```` fence whose first line is such a call line. The fence holds calls
//!   only when every line of it is call lines, blank lines or `#` comments; one line of other
//!   code makes the whole fence code, passed through as prose up to its closing fence (so none
//!   of its lines is read as a call either). Fences are claimed only in a registry without
//!   builtins: with builtins, language fences belong to the text protocol.
//! - Every call names a declared tool ([`resolve_name`]); every argument is a literal (a
//!   string in either quote, a number, `True`/`False`/`None`, a list, dict or tuple of them).
//!   A variable or an expression (`5 * 2800.0`) is not a value: the line is prose, never a
//!   guessed value — or, where the call is the reply's one attempt at a call, an
//!   `expression_argument` failure (below).
//! - Keyword arguments are taken as named; positional ones are mapped onto the parameters in
//!   the order the tool's schema declares them (`positional_arguments`), and a call that
//!   passes more of them than the schema names, or one that also names the same parameter,
//!   fails `bad_arguments`. Arguments are then checked against the schema like every format's.
//!
//! Nothing goes out before the line (line mode) or the fence (fence mode) ends: then each call
//! becomes a `Proposal` (with `bare_call`) or a `Failure` carrying its own text. A line's
//! newline and whatever follows a closing fence on its line are prose again.
//!
//! # Expression arguments
//!
//! A call whose arguments are a Python expression (`n=5 * 2`, `data=dataset`,
//! `city=f"{name}"`: read by [`ExprScan`], which tracks brackets, strings and operators and
//! evaluates nothing; words in parentheses, `f(the user's list)`, are no expression) is the
//! `expression_argument` failure, carrying its text, when all of this holds:
//!
//! - it is the only call of its line (line mode, written bare, not in `[…]`) or its fence
//!   (other lines there are blank or comments);
//! - it is the reply's one attempt at a call: no call, failure or empty answer came before it
//!   ([`Ctx::attempted`], [`Ctx::answered`]), and nothing but blanks follows it (after its
//!   line's newline, or its closing fence) to the end of the reply.
//!
//! The last condition is known only at the reply's end, so the call and the blanks after it
//! are held until then; the first byte that is not a blank makes the line prose (rejected, as
//! any line that is not calls) or the fence prose up to its closing fence, and a later call
//! is decoded as if the expression had not been there. A line or fence that holds another
//! call too is prose at once, as before. No value is ever computed from an expression.

use serde_json::{Map, Value};

use super::call::resolve_name;
use super::json::{Push, ValueParser};
use super::{Driven, Eos, Flow, Machine};
use crate::action::ActionProposal;
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Body, Ctx, Detect, Format, FormatId, Position, push_text};
use crate::registry::Registry;

const NAME_MAX: usize = 128;
/// The most blanks before a call line's first name (its indentation), and between a fence
/// line and its first call line.
const LEAD_MAX: usize = 64;
/// The longest fence info word looked at.
const INFO_MAX: usize = 16;
/// Fence info words whose fences may hold calls (compared without letter case).
const CALL_FENCES: &[&str] = &["", "python", "py", "python3", "tool_code"];

/// The most bytes an expression call's arguments may take, from its `(` on.
const EXPR_MAX: usize = 4096;
/// The most brackets open inside an expression call's arguments.
const DEPTH_MAX: usize = 32;
/// Keywords that join two operands (`a if b else c`, `x not in y`, `[x for x in y]`).
const JOINING: &[&str] = &["and", "or", "in", "is", "not", "if", "else", "for"];
/// Keywords that may lead an operand (`not x`, `lambda y: y`, `x not in y`).
const LEADING: &[&str] = &["not", "lambda", "await", "in"];

const LINE_START: &[u8] = b"`\t abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The line-start detector of bare calls and fences of calls.
#[derive(Debug)]
pub struct BareCall {
    text_mode: bool,
}

impl BareCall {
    pub fn new(text_mode: bool) -> BareCall {
        BareCall { text_mode }
    }
}

/// What the bytes at a line start are.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    No,
    More,
    /// A call line: a declared name then `(`.
    Line,
    /// A call fence of `ticks` backticks; `inline` when its call line follows them on the
    /// fence line itself.
    Fence {
        ticks: usize,
        inline: bool,
    },
}

/// A call line's start at `b[i..]`: blanks, an optional `[` (only after blanks, unless
/// `list_ok`), blanks, a declared tool's dotted name, `(`.
fn call_line_at(b: &[u8], mut i: usize, list_ok: bool, at: Position, ctx: &Ctx<'_>) -> Shape {
    let more = if at.eos { Shape::No } else { Shape::More };
    let lead = i;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
        if i - lead > LEAD_MAX {
            return Shape::No;
        }
    }
    let Some(&c) = b.get(i) else { return more };
    if c == b'[' {
        let col0 = i == lead;
        i += 1;
        let open = i;
        while i < b.len() && b[i] == b' ' {
            i += 1;
            if i - open > LEAD_MAX {
                return Shape::No;
            }
        }
        match b.get(i) {
            None => return more,
            Some(b']') => return empty_list_end(b, i + 1, at),
            Some(_) => {}
        }
        // A line-start list of calls is the pythonic format's own trigger.
        if col0 && !list_ok {
            return Shape::No;
        }
    }
    let Some(&c) = b.get(i) else { return more };
    if !ident_start(c) {
        return Shape::No;
    }
    let start = i;
    while i < b.len() && name_char(char::from(b[i])) {
        i += 1;
        if i - start > NAME_MAX {
            return Shape::No;
        }
    }
    match b.get(i) {
        None => more,
        Some(b'(') => {
            // The name is ASCII (every byte was checked), so this slice is on boundaries.
            let name = std::str::from_utf8(&b[start..i]).unwrap_or_default();
            if resolve_name(ctx.registry, name).is_some() {
                Shape::Line
            } else {
                Shape::No
            }
        }
        Some(_) => Shape::No,
    }
}

/// After an empty list `[]`: blanks, then the end of the line (or of the reply, or a closing
/// fence on the same line). Such a line is the reply's answer "no call".
fn empty_list_end(b: &[u8], mut i: usize, at: Position) -> Shape {
    let from = i;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
        i += 1;
        if i - from > LEAD_MAX {
            return Shape::No;
        }
    }
    match b.get(i) {
        None if at.eos => Shape::Line,
        None => Shape::More,
        Some(b'\n' | b'`') => Shape::Line,
        Some(_) => Shape::No,
    }
}

/// A fence line of a call fence, then blank lines and a call line.
fn fence_at(b: &[u8], at: Position, ctx: &Ctx<'_>) -> Shape {
    let more = if at.eos { Shape::No } else { Shape::More };
    let mut i = 0;
    while i < b.len() && b[i] == b'`' {
        i += 1;
        if i > 9 {
            return Shape::No;
        }
    }
    if i == b.len() {
        return more;
    }
    if i < 3 {
        return Shape::No;
    }
    let ticks = i;
    // A fence on one line: ```` ```[f(a=1)]``` ````.
    if b[i] == b'[' {
        return match call_line_at(b, i, true, at, ctx) {
            Shape::Line => Shape::Fence {
                ticks,
                inline: true,
            },
            other => other,
        };
    }
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
        if i - ticks > INFO_MAX {
            return Shape::No;
        }
    }
    let info = std::str::from_utf8(&b[ticks..i]).unwrap_or_default();
    if i == b.len() {
        return more;
    }
    if !CALL_FENCES.iter().any(|f| f.eq_ignore_ascii_case(info)) {
        return Shape::No;
    }
    // Blanks to the end of the fence line.
    let info_end = i;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
        i += 1;
        if i - info_end > LEAD_MAX {
            return Shape::No;
        }
    }
    match b.get(i) {
        None => return more,
        Some(b'\n') => i += 1,
        Some(_) => return Shape::No,
    }
    // Blank lines, then the first content line, whose indentation is its call line's.
    let from = i;
    let mut line = i;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        if b[i] == b'\n' {
            line = i + 1;
        }
        i += 1;
        if i - from > LEAD_MAX {
            return Shape::No;
        }
    }
    if i == b.len() {
        return more;
    }
    match call_line_at(b, line, false, at, ctx) {
        Shape::Line => Shape::Fence {
            ticks,
            inline: false,
        },
        other => other,
    }
}

impl Format for BareCall {
    fn id(&self) -> FormatId {
        FormatId::Pythonic
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b""
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        LINE_START
    }
    fn line_start_applies(&self, b: u8, registry: &Registry) -> bool {
        // A call line starts with a tool's name (matched without letter case); blanks and a
        // fence may come first whatever the names.
        !b.is_ascii_alphabetic()
            || registry.tool_names().any(|n| {
                n.as_bytes()
                    .first()
                    .is_some_and(|f| f.eq_ignore_ascii_case(&b))
            })
    }
    fn detect(&self, s: &str, at: Position, ctx: &Ctx<'_>) -> Detect {
        // A reply answers once: after a call, code in its explanation (or a transcript the model
        // runs on into) shows calls, it does not make them.
        if !at.line_start || ctx.next_index > 0 || ctx.answered {
            return Detect::No;
        }
        let b = s.as_bytes();
        let shape = if b.first() == Some(&b'`') {
            if ctx.registry.has_builtins() {
                return Detect::No;
            }
            fence_at(b, at, ctx)
        } else {
            call_line_at(b, 0, false, at, ctx)
        };
        let mode = match shape {
            Shape::No => return Detect::No,
            Shape::More => return Detect::NeedMore,
            Shape::Line => Mode::Line { lines: 0 },
            Shape::Fence { ticks, .. } => Mode::Fence { ticks },
        };
        let inline = matches!(shape, Shape::Fence { inline: true, .. });
        Detect::Start(Driven::boxed(BareMachine {
            st: match mode {
                Mode::Line { .. } => St::LineLead,
                Mode::Fence { ticks } if inline => St::Opening(ticks),
                Mode::Fence { .. } => St::FenceLine,
            },
            mode,
            line: Line::Bare,
            calls: Vec::new(),
            text_mode: self.text_mode,
            expr: false,
        }) as Box<dyn Body>)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Lines of calls, each emitted at its newline (or the end of the reply); blank lines may
    /// separate them, and the first line that is not calls ends them. `lines` have been
    /// emitted.
    Line { lines: usize },
    /// Lines of calls in a fence opened by `ticks` backticks.
    Fence { ticks: usize },
}

/// How the current call line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Calls joined by `,` or `;`.
    Bare,
    /// Inside `[`…`]`.
    List,
}

#[derive(Debug)]
enum St {
    /// The backticks of a one-line fence still to read.
    Opening(usize),
    /// The rest of the fence line, up to its newline.
    FenceLine,
    /// A line's start: blanks, then a call, a `[`, a comment, a blank line or the closing
    /// fence.
    LineLead,
    /// Before a call's name, after a separator (blanks and newlines may come first).
    CallStart,
    Name(String),
    /// After `(` or an argument's `,`: a keyword, a literal or `)`.
    ArgStart,
    /// An identifier in argument position: a keyword if `=` follows, else it must be
    /// `True`, `False` or `None`.
    Word(String),
    AfterWord(String),
    Val(ValueParser),
    AfterVal,
    /// After a call's `)`.
    AfterCall,
    /// After a `;`: blanks, then the end of the line or another call.
    AfterSemi,
    /// After a list's `]`: blanks and an optional `;`, then the end of the line.
    ListEnd,
    /// A `#` comment line inside a fence.
    Comment,
    /// Backticks at a line start inside a fence.
    Closing(usize),
    /// After the closing fence: blanks, then the line's end.
    AfterClosing,
    /// The fence turned out to hold other code: prose up to its closing fence.
    Code(CodeLine),
    /// After a line of calls was emitted: blank lines (`blanks` bytes so far), then maybe
    /// the next line of calls.
    NextLine {
        blanks: usize,
    },
    /// The arguments of a call with expression arguments, up to its `)`.
    Expr(ExprScan),
    /// After the line or fence of an expression call: blanks only, to the end of the reply.
    /// The failure's text ends at `end` in the raw text.
    Tail {
        end: usize,
    },
}

/// Where a code line of a fence passed through stands.
#[derive(Debug, Clone, Copy)]
enum CodeLine {
    /// Blanks at its start.
    Lead,
    /// Backticks at its start.
    Ticks(usize),
    /// The closing fence was read; blanks may follow it.
    Closed,
    /// Anything else: up to its newline.
    Rest,
}

#[derive(Debug)]
struct BareCallArgs {
    name: String,
    args: Map<String, Value>,
    positional: Vec<Value>,
    pending_key: Option<String>,
    /// Where the call's text starts in the construct's raw text (0 for the first); it runs
    /// up to the next call's start.
    start: usize,
    /// Where its arguments start in the raw text (after its `(`).
    open: usize,
}

#[derive(Debug)]
struct BareMachine {
    st: St,
    mode: Mode,
    line: Line,
    calls: Vec<BareCallArgs>,
    text_mode: bool,
    /// The construct is one call with expression arguments: an `expression_argument` failure
    /// if only blanks follow it to the reply's end, else prose.
    expr: bool,
}

impl BareMachine {
    /// The bytes are not calls: a line goes back to prose; a fence is code.
    fn not_calls(&mut self, c: char, raw: &str) -> Flow {
        match self.mode {
            Mode::Line { lines: 0 } => Flow::Reject,
            // The lines before were calls and are out; this one goes back to prose.
            Mode::Line { .. } => {
                self.calls.clear();
                Flow::Ended {
                    held: raw.to_owned(),
                    line_start: true,
                }
            }
            Mode::Fence { .. } => {
                self.calls.clear();
                self.st = St::Code(if c == '\n' {
                    CodeLine::Lead
                } else {
                    CodeLine::Rest
                });
                Flow::More
            }
        }
    }

    /// A call line ended (its newline is `c`, or the reply ended).
    fn line_end(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match self.mode {
            Mode::Line { .. } if self.expr => {
                self.st = St::Tail { end: raw.len() };
                Flow::More
            }
            Mode::Line { lines } => {
                self.conclude(raw, ctx, out, None);
                self.mode = Mode::Line { lines: lines + 1 };
                self.line = Line::Bare;
                self.st = St::NextLine { blanks: 0 };
                Flow::More
            }
            Mode::Fence { .. } => {
                self.line = Line::Bare;
                self.st = St::LineLead;
                Flow::More
            }
        }
    }

    /// A backtick right after a call line: a fence's closing fence on the same line.
    fn closing_after_line(&mut self, c: char, raw: &str) -> Flow {
        if matches!(self.mode, Mode::Fence { .. }) {
            self.st = St::Closing(1);
            return Flow::More;
        }
        self.not_calls(c, raw)
    }

    /// Emits every call read: a proposal for each that validates, else a failure with its
    /// own text.
    fn conclude(
        &mut self,
        raw: &str,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
        extra: Option<RepairKind>,
    ) {
        ctx.answered = true;
        let calls = std::mem::take(&mut self.calls);
        let last = calls.len().saturating_sub(1);
        let ends: Vec<usize> = calls
            .iter()
            .skip(1)
            .map(|c| c.start)
            .chain([raw.len()])
            .collect();
        for (k, (call, end)) in calls.into_iter().zip(ends).enumerate() {
            let own = raw.get(call.start..end).unwrap_or(raw);
            let mut repairs = vec![RepairKind::BareCall];
            let validated = place_positional(ctx, call, &mut repairs)
                .and_then(|(name, args)| ctx.registry.validate(&name, &Value::Object(args)));
            match validated {
                Ok((action, reg_repairs)) => {
                    repairs.extend(reg_repairs);
                    if k == last {
                        repairs.extend(extra);
                    }
                    if self.text_mode && !ctx.auto {
                        repairs.push(RepairKind::NativeInTextMode);
                    }
                    let proposal = ActionProposal {
                        action,
                        repairs,
                        format: FormatId::Pythonic,
                    };
                    super::emit_whole(ctx, out, proposal);
                }
                Err(kind) => out.push(Event::Failure {
                    index: None,
                    kind,
                    raw: own.to_owned(),
                }),
            }
        }
    }

    /// An argument of the current call is not a literal (`c`, the last byte of `raw`, showed
    /// it). If the call may be the reply's one attempt at a call (the first of its construct,
    /// written bare, nothing attempted before), its arguments are read on as an expression
    /// to its `)`; otherwise the bytes are not calls.
    fn expression(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>) -> Flow {
        let first = !ctx.attempted
            && self.line == Line::Bare
            && self.calls.len() == 1
            && matches!(self.mode, Mode::Line { lines: 0 } | Mode::Fence { .. });
        ctx.attempted = true;
        let Some(open) = self.calls.first().map(|call| call.open) else {
            return self.not_calls(c, raw);
        };
        if !first {
            return self.not_calls(c, raw);
        }
        // The arguments read so far as literals are read again as an expression: once per
        // call, bounded by `EXPR_MAX`.
        let mut scan = ExprScan::new();
        for ch in raw.get(open..).unwrap_or_default().chars() {
            match scan.push(ch) {
                Scan::More => {}
                Scan::Closed => {
                    self.expr = true;
                    self.st = St::AfterCall;
                    return Flow::More;
                }
                Scan::Invalid => return self.not_calls(c, raw),
            }
        }
        self.expr = true;
        self.st = St::Expr(scan);
        Flow::More
    }

    /// The expression call's failure, its text ending at `end`; what follows goes back to
    /// prose.
    fn expression_failure(&mut self, raw: &str, end: usize, out: &mut Vec<Event>) -> Eos {
        let end = if raw.is_char_boundary(end) {
            end
        } else {
            raw.len()
        };
        out.push(Event::Failure {
            index: None,
            kind: FailureKind::ExpressionArgument,
            raw: raw[..end].to_owned(),
        });
        Eos::Closed((end < raw.len()).then(|| raw[end..].to_owned()))
    }

    fn current(&mut self) -> Option<&mut BareCallArgs> {
        self.calls.last_mut()
    }

    /// Stores a finished argument value.
    fn store(&mut self, v: Value) -> bool {
        let Some(call) = self.current() else {
            return false;
        };
        match call.pending_key.take() {
            Some(k) => {
                if call.args.contains_key(&k) {
                    return false;
                }
                call.args.insert(k, v);
            }
            // Python allows no positional argument after a keyword one.
            None if !call.args.is_empty() => return false,
            None => call.positional.push(v),
        }
        true
    }

    fn start_call(&mut self, name: String, raw: &str, ctx: &Ctx<'_>) -> bool {
        if resolve_name(ctx.registry, &name).is_none() {
            return false;
        }
        let start = if self.calls.is_empty() {
            0
        } else {
            // The name is ASCII: it and the `(` are the last bytes of the raw text.
            raw.len().saturating_sub(name.len() + 1)
        };
        self.calls.push(BareCallArgs {
            name,
            args: Map::new(),
            positional: Vec::new(),
            pending_key: None,
            start,
            open: raw.len(),
        });
        true
    }

    fn code(&mut self, line: CodeLine, c: char, out: &mut Vec<Event>, raw: &str) -> Flow {
        let Mode::Fence { ticks } = self.mode else {
            return Flow::Reject;
        };
        let next = match (line, c) {
            (CodeLine::Closed, '\n') => return Flow::DoneBefore,
            (CodeLine::Ticks(n), '\n') if n >= ticks => return Flow::DoneBefore,
            (CodeLine::Closed, ' ' | '\t' | '\r') => CodeLine::Closed,
            (_, '\n') => {
                // Code is prose: release each finished line as it comes.
                push_text(out, raw);
                self.st = St::Code(CodeLine::Lead);
                return Flow::Claimed { keep: 0 };
            }
            (CodeLine::Lead, ' ' | '\t') => CodeLine::Lead,
            (CodeLine::Lead, '`') => CodeLine::Ticks(1),
            (CodeLine::Ticks(n), '`') => CodeLine::Ticks(n + 1),
            (CodeLine::Ticks(n), ' ' | '\t' | '\r') if n >= ticks => CodeLine::Closed,
            _ => CodeLine::Rest,
        };
        self.st = St::Code(match next {
            CodeLine::Ticks(n) if n > 9 => CodeLine::Rest,
            n => n,
        });
        Flow::More
    }
}

/// Reads the arguments of a call once one of them is not a literal: tells a Python expression
/// (`5 * 2800.0`, `dataset`, `np.array([1, 2])`, `f"{x}"`, `lambda y: y`) from words in
/// parentheses and finds the call's `)`. It tracks open brackets, strings and whether an
/// operand or an operator comes next, leniently (it accepts some text Python would not); it
/// evaluates nothing.
#[derive(Debug)]
struct ExprScan {
    /// Brackets open inside the call's parentheses, innermost last.
    open: Vec<char>,
    tok: Tok,
    /// Bytes read since the call's `(`.
    len: usize,
}

#[derive(Debug)]
enum Tok {
    /// An operand comes next: after `(`, `,`, an operator or a leading keyword. `empty`: right
    /// after an opening bracket or a comma, where a closing bracket may also come.
    Operand { empty: bool },
    /// An operand ended: an operator, a bracket, a comma or a joining keyword comes next.
    After,
    /// An identifier; `joining` when it stands where an operator must (then it must be a
    /// joining keyword).
    Word { text: String, joining: bool },
    /// A number (digits, letters, `_` and `.`: `2800.0`, `1e5`, `0x1f`).
    Number,
    /// A string opened by `quote`, on one line.
    Str { quote: char, escaped: bool },
}

/// What one character did to an [`ExprScan`].
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    More,
    /// The call's own `)`.
    Closed,
    /// Not an expression (or past the bounds).
    Invalid,
}

/// `f`, `r`, `b`, `u` and their pairs, which may open a string.
fn string_prefix(w: &str) -> bool {
    w.len() <= 2
        && w.chars()
            .all(|c| matches!(c.to_ascii_lowercase(), 'f' | 'r' | 'b' | 'u'))
}

impl ExprScan {
    /// A scan from right after the call's `(`.
    fn new() -> ExprScan {
        ExprScan {
            open: Vec::new(),
            tok: Tok::Operand { empty: true },
            len: 0,
        }
    }

    fn push(&mut self, c: char) -> Scan {
        self.len += c.len_utf8();
        if self.len > EXPR_MAX {
            return Scan::Invalid;
        }
        // The end of a token of several characters.
        match &mut self.tok {
            Tok::Str { quote, escaped } => {
                if *escaped {
                    *escaped = false;
                } else if c == '\\' {
                    *escaped = true;
                } else if c == *quote {
                    self.tok = Tok::After;
                } else if c == '\n' {
                    return Scan::Invalid;
                }
                return Scan::More;
            }
            Tok::Number => {
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                    return Scan::More;
                }
                self.tok = Tok::After;
            }
            Tok::Word { text, joining } => {
                if c.is_ascii_alphanumeric() || c == '_' {
                    if text.len() >= NAME_MAX {
                        return Scan::Invalid;
                    }
                    text.push(c);
                    return Scan::More;
                }
                let joining = *joining;
                let text = std::mem::take(text);
                if !joining && matches!(c, '\'' | '"') && string_prefix(&text) {
                    self.tok = Tok::Str {
                        quote: c,
                        escaped: false,
                    };
                    return Scan::More;
                }
                self.tok = if joining {
                    // Two operands side by side (`the user`): words, not an expression.
                    if !JOINING.contains(&text.as_str()) {
                        return Scan::Invalid;
                    }
                    Tok::Operand { empty: false }
                } else if LEADING.contains(&text.as_str()) {
                    Tok::Operand { empty: false }
                } else {
                    Tok::After
                };
            }
            Tok::Operand { .. } | Tok::After => {}
        }
        let after = matches!(self.tok, Tok::After);
        let empty = matches!(self.tok, Tok::Operand { empty: true });
        match c {
            ' ' | '\t' | '\r' | '\n' => {}
            '\'' | '"' if !after => {
                self.tok = Tok::Str {
                    quote: c,
                    escaped: false,
                };
            }
            c if (c.is_ascii_digit() || c == '.') && !after => self.tok = Tok::Number,
            c if c.is_ascii_alphabetic() || c == '_' => {
                self.tok = Tok::Word {
                    text: c.to_string(),
                    joining: after,
                };
            }
            // A group, or (after an operand) a call or a subscript.
            '(' | '[' | '{' if !(after && c == '{') => {
                if self.open.len() >= DEPTH_MAX {
                    return Scan::Invalid;
                }
                self.open.push(c);
                self.tok = Tok::Operand { empty: true };
            }
            ')' | ']' | '}' if after || empty => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                match self.open.pop() {
                    Some(o) if o == want => self.tok = Tok::After,
                    None if c == ')' => return Scan::Closed,
                    _ => return Scan::Invalid,
                }
            }
            ',' if after => self.tok = Tok::Operand { empty: true },
            // Unary where an operand comes, binary after one; `*` and `**` also unpack. A
            // slice may start with `:`.
            '+' | '-' | '*' | '~' | ':' => self.tok = Tok::Operand { empty: false },
            '.' | '/' | '%' | '@' | '&' | '|' | '^' | '<' | '>' | '=' | '!' if !empty => {
                self.tok = Tok::Operand { empty: false };
            }
            _ => return Scan::Invalid,
        }
        Scan::More
    }
}

/// The call's name and its arguments object, its positional arguments placed by the schema's
/// parameter order.
fn place_positional(
    ctx: &Ctx<'_>,
    call: BareCallArgs,
    repairs: &mut Vec<RepairKind>,
) -> Result<(String, Map<String, Value>), crate::event::FailureKind> {
    let BareCallArgs {
        name,
        mut args,
        positional,
        ..
    } = call;
    if positional.is_empty() {
        return Ok((name, args));
    }
    let bad = crate::event::FailureKind::BadArguments;
    let order = ctx.registry.parameter_order(&name).ok_or(bad)?;
    if positional.len() > order.len() {
        return Err(bad);
    }
    let mut placed = Map::new();
    for (key, v) in order.iter().zip(positional) {
        if args.contains_key(key) {
            return Err(bad);
        }
        placed.insert(key.clone(), v);
    }
    placed.append(&mut args);
    repairs.push(RepairKind::PositionalArguments);
    Ok((name, placed))
}

impl Machine for BareMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            St::Opening(left) => {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    self.st = St::LineLead;
                }
                Flow::More
            }
            St::FenceLine => {
                if c == '\n' {
                    self.st = St::LineLead;
                }
                Flow::More
            }
            St::LineLead => match c {
                ' ' | '\t' | '\r' => Flow::More,
                '\n' if matches!(self.mode, Mode::Fence { .. }) => Flow::More,
                '`' if matches!(self.mode, Mode::Fence { .. }) => {
                    self.st = St::Closing(1);
                    Flow::More
                }
                '#' if matches!(self.mode, Mode::Fence { .. }) => {
                    self.st = St::Comment;
                    Flow::More
                }
                // A fence of an expression call holds no other call.
                '[' if !self.expr => {
                    self.line = Line::List;
                    self.st = St::CallStart;
                    Flow::More
                }
                c if (c.is_ascii_alphabetic() || c == '_') && !self.expr => {
                    self.st = St::Name(c.to_string());
                    Flow::More
                }
                c => self.not_calls(c, raw),
            },
            St::Comment => {
                if c == '\n' {
                    self.st = St::LineLead;
                }
                Flow::More
            }
            St::Closing(n) => {
                if c == '`' {
                    *n += 1;
                    return Flow::More;
                }
                let n = *n;
                let Mode::Fence { ticks } = self.mode else {
                    return Flow::Reject;
                };
                if n < ticks {
                    return self.not_calls(c, raw);
                }
                self.st = St::AfterClosing;
                self.push(c, raw, ctx, out)
            }
            St::AfterClosing => match c {
                ' ' | '\t' | '\r' => Flow::More,
                // The newline is prose, as after any fence.
                '\n' if self.expr => {
                    self.st = St::Tail { end: raw.len() - 1 };
                    Flow::More
                }
                '\n' => {
                    self.conclude(raw, ctx, out, None);
                    Flow::DoneBefore
                }
                c => self.not_calls(c, raw),
            },
            St::CallStart => {
                if c.is_whitespace() {
                    return Flow::More;
                }
                if c.is_ascii_alphabetic() || c == '_' {
                    self.st = St::Name(c.to_string());
                    return Flow::More;
                }
                // `[]`, or a list's trailing comma.
                if c == ']' && self.line == Line::List {
                    self.st = St::ListEnd;
                    return Flow::More;
                }
                self.not_calls(c, raw)
            }
            St::Name(name) => {
                if name_char(c) && name.len() < NAME_MAX {
                    name.push(c);
                    return Flow::More;
                }
                let name = std::mem::take(name);
                if c != '(' || name.ends_with('.') || !self.start_call(name, raw, ctx) {
                    return self.not_calls(c, raw);
                }
                self.st = St::ArgStart;
                Flow::More
            }
            St::ArgStart => {
                if c.is_whitespace() {
                    return Flow::More;
                }
                if c == ')' {
                    self.st = St::AfterCall;
                    return Flow::More;
                }
                if c.is_ascii_alphabetic() || c == '_' {
                    self.st = St::Word(c.to_string());
                    return Flow::More;
                }
                self.st = St::Val(ValueParser::python_literal());
                self.push(c, raw, ctx, out)
            }
            St::Word(w) => {
                if (c.is_ascii_alphanumeric() || c == '_') && w.len() < NAME_MAX {
                    w.push(c);
                    return Flow::More;
                }
                let w = std::mem::take(w);
                self.st = St::AfterWord(w);
                self.push(c, raw, ctx, out)
            }
            St::AfterWord(w) => {
                if c == ' ' || c == '\t' {
                    return Flow::More;
                }
                let w = std::mem::take(w);
                if c == '=' {
                    let Some(call) = self.current() else {
                        return Flow::Reject;
                    };
                    call.pending_key = Some(w);
                    self.st = St::Val(ValueParser::python_literal());
                    return Flow::More;
                }
                let v = match w.as_str() {
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    "None" => Value::Null,
                    // A variable or an expression: not a value.
                    _ => return self.expression(c, raw, ctx),
                };
                if !self.store(v) {
                    return self.not_calls(c, raw);
                }
                self.st = St::AfterVal;
                self.push(c, raw, ctx, out)
            }
            St::Val(p) => {
                if p.is_empty() && c.is_whitespace() {
                    return Flow::More;
                }
                let r = match p.push(c) {
                    Ok(r) => r,
                    Err(_) => return self.expression(c, raw, ctx),
                };
                if r == Push::More {
                    return Flow::More;
                }
                let Some(v) = p.take_value() else {
                    return self.expression(c, raw, ctx);
                };
                if !self.store(v) {
                    return self.not_calls(c, raw);
                }
                self.st = St::AfterVal;
                if r == Push::CompleteBefore {
                    return self.push(c, raw, ctx, out);
                }
                Flow::More
            }
            St::AfterVal => match c {
                c if c.is_whitespace() => Flow::More,
                ',' => {
                    self.st = St::ArgStart;
                    Flow::More
                }
                ')' => {
                    self.st = St::AfterCall;
                    Flow::More
                }
                c => self.expression(c, raw, ctx),
            },
            St::Expr(scan) => match scan.push(c) {
                Scan::More => Flow::More,
                Scan::Closed => {
                    self.st = St::AfterCall;
                    Flow::More
                }
                Scan::Invalid => self.not_calls(c, raw),
            },
            St::AfterCall => match (self.line, c) {
                (_, ' ' | '\t' | '\r') => Flow::More,
                // An expression call is one alone.
                (_, ',') if self.expr => self.not_calls(c, raw),
                (_, ',') => {
                    self.st = St::CallStart;
                    Flow::More
                }
                (Line::Bare, ';') => {
                    self.st = St::AfterSemi;
                    Flow::More
                }
                (Line::Bare, '\n') => self.line_end(raw, ctx, out),
                (Line::Bare, '`') => self.closing_after_line(c, raw),
                (Line::List, ']') => {
                    self.st = St::ListEnd;
                    Flow::More
                }
                (_, c) => self.not_calls(c, raw),
            },
            St::AfterSemi => match c {
                ' ' | '\t' | '\r' => Flow::More,
                '\n' => self.line_end(raw, ctx, out),
                '`' => self.closing_after_line(c, raw),
                c if (c.is_ascii_alphabetic() || c == '_') && !self.expr => {
                    self.st = St::Name(c.to_string());
                    Flow::More
                }
                c => self.not_calls(c, raw),
            },
            St::ListEnd => match c {
                ' ' | '\t' | '\r' => Flow::More,
                ';' => {
                    self.st = St::AfterSemi;
                    Flow::More
                }
                '\n' => self.line_end(raw, ctx, out),
                '`' => self.closing_after_line(c, raw),
                c => self.not_calls(c, raw),
            },
            St::Code(line) => {
                let line = *line;
                self.code(line, c, out, raw)
            }
            St::Tail { end } => {
                if c.is_whitespace() {
                    return Flow::More;
                }
                // Not the reply's last: the expression call is prose.
                match self.mode {
                    Mode::Line { .. } => Flow::Reject,
                    Mode::Fence { .. } => Flow::Ended {
                        held: raw.get(*end..).unwrap_or_default().to_owned(),
                        line_start: false,
                    },
                }
            }
            St::NextLine { blanks } => {
                if matches!(c, ' ' | '\t' | '\r' | '\n') {
                    // A long run of blanks ends the lines: it goes back to prose.
                    if *blanks >= LEAD_MAX {
                        return self.not_calls(c, raw);
                    }
                    *blanks += 1;
                    return Flow::More;
                }
                self.st = St::LineLead;
                self.push(c, raw, ctx, out)
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, St::LineLead);
        if self.expr {
            // The reply ends after the expression call, its line or its fence (closed or
            // not): it was the reply's one attempt.
            let end = match (self.mode, st) {
                (_, St::Tail { end }) => Some(end),
                (_, St::AfterCall | St::AfterSemi) => Some(raw.len()),
                (Mode::Fence { ticks }, St::Closing(n)) if n >= ticks => Some(raw.len()),
                (Mode::Fence { .. }, St::AfterClosing | St::LineLead | St::Comment) => {
                    Some(raw.len())
                }
                _ => None,
            };
            return match (end, self.mode) {
                (Some(end), _) => self.expression_failure(raw, end, out),
                (None, Mode::Line { .. }) => Eos::Reject,
                // Code, or a call cut off: the fence's text is prose.
                (None, Mode::Fence { .. }) => Eos::Closed(None),
            };
        }
        let line_done = matches!(st, St::AfterCall | St::AfterSemi | St::ListEnd)
            && !(matches!(st, St::AfterCall) && self.line == Line::List);
        match self.mode {
            Mode::Line { .. } if line_done => {
                self.conclude(raw, ctx, out, None);
                Eos::Closed(None)
            }
            Mode::Line { lines: 0 } => Eos::Reject,
            // Emitted lines stand; what was read after them is prose.
            Mode::Line { .. } => Eos::Closed((!raw.is_empty()).then(|| raw.to_owned())),
            Mode::Fence { ticks } => {
                match st {
                    St::Closing(n) if n >= ticks => self.conclude(raw, ctx, out, None),
                    St::AfterClosing => self.conclude(raw, ctx, out, None),
                    St::LineLead | St::Comment => {
                        self.conclude(raw, ctx, out, Some(RepairKind::MissingCloseTag));
                    }
                    _ if line_done => {
                        self.conclude(raw, ctx, out, Some(RepairKind::MissingCloseTag));
                    }
                    // A call cut off, or code: the fence's text is prose.
                    _ => {}
                }
                Eos::Closed(None)
            }
        }
    }

    fn flush(&mut self, _out: &mut Vec<Event>) {}

    fn uncommitted(&self) -> bool {
        // Lines already emitted stand: past the cap, what follows them is a `too_long`
        // failure, not a rejection that would hand their bytes back as prose.
        !matches!(self.mode, Mode::Line { lines } if lines > 0)
    }

    fn open_index(&self) -> Option<usize> {
        None
    }
}
