//! Echoes: actions that copy the protocol's own help text back (`READ path`, `RUN program
//! args`, an edit whose SEARCH is the prompt's placeholder body, the worked example of the
//! system prompt). Tiny models do this a lot; such an action decodes (the codec never guesses
//! what a well-formed line meant) but no one should act on it, and measurements count it
//! apart from real actions.

use crate::action::Action;
use crate::registry::{
    BUILTINS, EXAMPLE_REPLACE, EXAMPLE_SEARCH, WHOLE_EXAMPLE_CONTENT, WORKED_EXAMPLE_PATH,
};

/// Recognises echoes of the builtin tools' help text: an action whose arguments are all
/// placeholder words of *its own* tool's syntax line (`READ path`, `MOVE src -> dst`, but not
/// `LIST src`, a real directory), and the system prompt's example bodies.
#[derive(Debug, Clone)]
pub struct Echoes {
    /// Per builtin tool name, the placeholder words of its syntax line.
    placeholders: Vec<(&'static str, Vec<String>)>,
}

/// The placeholder words of one syntax line: `READ path[:start-end]` gives `path[:start-end]`,
/// `path` and `:start-end`'s parts as written.
fn syntax_words(syntax: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in syntax.split_whitespace().skip(1) {
        let inner = w.trim_start_matches('[').trim_end_matches(']');
        let bare = inner.split(['[', ':']).next().unwrap_or(inner);
        for p in [w, inner, bare] {
            if !p.is_empty() && p != "->" && p != "--" && !out.iter().any(|x| x == p) {
                out.push(p.to_owned());
            }
        }
    }
    out
}

impl Default for Echoes {
    fn default() -> Echoes {
        Echoes {
            placeholders: BUILTINS
                .iter()
                .map(|t| (t.name, syntax_words(t.syntax)))
                .collect(),
        }
    }
}

impl Echoes {
    fn words_of(&self, tool: &str) -> &[String] {
        self.placeholders
            .iter()
            .find(|(n, _)| *n == tool)
            .map_or(&[], |(_, w)| w.as_slice())
    }

    fn is_placeholder(&self, tool: &str, w: &str) -> bool {
        self.words_of(tool).iter().any(|p| p == w)
    }

    /// True when every argument of `action` is a placeholder of its tool's help line, or it
    /// writes one of the system prompt's example bodies, or it is the worked example's edit.
    /// A call named like a builtin (the builtins offered as native tools) is judged as that
    /// builtin.
    pub fn is_echo(&self, action: &Action) -> bool {
        let example = |body: &str| body == EXAMPLE_SEARCH || body == EXAMPLE_REPLACE;
        match action {
            Action::Create { content, .. } if example(content) => return true,
            // The whole-file protocol's example writes the worked example's file.
            Action::Create { path, .. } if path == WORKED_EXAMPLE_PATH => return true,
            // The whole-file protocol's example's content, copied under any path: the 0.5B
            // wrote it over README.md when asked to fix a typo there.
            Action::Create { content, .. } if content.trim() == WHOLE_EXAMPLE_CONTENT.trim() => {
                return true;
            }
            Action::Edit { path, blocks }
                if path == WORKED_EXAMPLE_PATH
                    || blocks
                        .iter()
                        .any(|b| example(&b.search) || example(&b.replace)) =>
            {
                return true;
            }
            _ => {}
        }
        let tool = action.name();
        let words: Vec<String> = match action.arguments() {
            serde_json::Value::Object(m) => m
                .values()
                .flat_map(|v| match v {
                    serde_json::Value::Array(a) => a.clone(),
                    other => vec![other.clone()],
                })
                .filter_map(|v| match v {
                    serde_json::Value::String(s) => Some(s),
                    // Edit blocks and other objects: their bodies were checked above.
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        !words.is_empty() && words.iter().all(|w| self.is_placeholder(tool, w.trim()))
    }

    /// Lines of a reply that are help lines: a verb followed only by placeholders, or a line
    /// starting with a tool's whole syntax (`READ path[:start-end]  show a file…`).
    pub fn lines_in(&self, reply: &str) -> usize {
        reply
            .lines()
            .filter(|line| {
                let mut words = line.split_whitespace();
                let Some(verb) = words.next() else {
                    return false;
                };
                let Some(tool) = BUILTINS.iter().find(|t| t.verb == verb) else {
                    return false;
                };
                let rest: Vec<&str> = words.filter(|w| *w != "->" && *w != "--").collect();
                line.starts_with(tool.syntax)
                    || (!rest.is_empty() && rest.iter().all(|w| self.is_placeholder(tool.name, w)))
            })
            .count()
    }
}

/// What one valid proposal of a reply came to. A proposal *acts* when it is neither an echo of
/// the help text nor refused by the harness before anything ran (the agent refuses a DONE
/// before any action succeeded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Acts,
    Echo,
    Refused,
}

/// A reply's proposals by [`Verdict`]: the one definition of "a reply that acts" shared by
/// `bellows eval --generate` / `tune` (conversion) and `bellows agent bench` (replies that
/// act), so the two never count differently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acting {
    pub acts: u32,
    pub echoes: u32,
    pub refused: u32,
}

impl Acting {
    pub fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Acts => self.acts += 1,
            Verdict::Echo => self.echoes += 1,
            Verdict::Refused => self.refused += 1,
        }
    }

    /// The reply acted: at least one proposal reached the executor.
    pub fn acted(&self) -> bool {
        self.acts > 0
    }
}

impl Echoes {
    /// [`Verdict::Echo`] for an echo, else [`Verdict::Acts`] (the harness may still refuse it).
    pub fn verdict(&self, action: &Action) -> Verdict {
        match self.is_echo(action) {
            true => Verdict::Echo,
            false => Verdict::Acts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Block;
    use crate::registry::WHOLE_EXAMPLE_PATH;

    #[test]
    fn a_reply_acts_only_through_a_proposal_that_is_neither_echo_nor_refused() {
        let e = Echoes::default();
        let read = |p: &str| Action::Read {
            path: p.to_owned(),
            start: None,
            end: None,
        };
        let mut echoed = Acting::default();
        echoed.count(e.verdict(&read("path")));
        echoed.count(Verdict::Refused);
        assert!(!echoed.acted());
        assert_eq!((echoed.acts, echoed.echoes, echoed.refused), (0, 1, 1));
        let mut real = echoed;
        real.count(e.verdict(&read("src/main.rs")));
        assert!(real.acted());
        assert_eq!((real.acts, real.echoes, real.refused), (1, 1, 1));
    }

    #[test]
    fn placeholders_and_example_bodies_are_echoes_real_arguments_are_not() {
        let e = Echoes::default();
        let read = |p: &str| Action::Read {
            path: p.to_owned(),
            start: None,
            end: None,
        };
        assert!(e.is_echo(&read("path")));
        assert!(!e.is_echo(&read("src/main.rs")));
        // `src` is MOVE's placeholder, not LIST's: listing src is a real action.
        assert!(!e.is_echo(&Action::List {
            path: "src".to_owned()
        }));
        assert!(e.is_echo(&Action::Move {
            from: "src".to_owned(),
            to: "dst".to_owned()
        }));
        let native_read = Action::Client {
            name: "read".to_owned(),
            arguments: serde_json::json!({"path": "path"}),
        };
        assert!(e.is_echo(&native_read));
        assert!(e.is_echo(&Action::Run {
            argv: vec!["program".into(), "args".into()]
        }));
        assert!(!e.is_echo(&Action::Run {
            argv: vec!["pytest".into(), "-q".into()]
        }));
        let edit = |path: &str, search: &str| Action::Edit {
            path: path.to_owned(),
            blocks: vec![Block {
                search: search.to_owned(),
                replace: "x\n".to_owned(),
            }],
        };
        assert!(e.is_echo(&edit("a.py", EXAMPLE_SEARCH)));
        assert!(e.is_echo(&edit(WORKED_EXAMPLE_PATH, "anything\n")));
        let create = |path: &str, content: &str| Action::Create {
            path: path.to_owned(),
            content: content.to_owned(),
        };
        assert!(e.is_echo(&create(WHOLE_EXAMPLE_PATH, WHOLE_EXAMPLE_CONTENT)));
        // The example's content over a real file of the task is the example still.
        let over_readme = format!("\n{WHOLE_EXAMPLE_CONTENT}\n");
        assert!(e.is_echo(&create("README.md", &over_readme)));
        // A real colors.py of the repository is no echo.
        assert!(!e.is_echo(&create(WHOLE_EXAMPLE_PATH, "RED = 1\n")));
        assert!(!e.is_echo(&edit("a.py", "def f():\n")));
        assert_eq!(
            e.lines_in("READ path[:start-end]  show a file\nREAD a.py\n"),
            1
        );
    }
}
