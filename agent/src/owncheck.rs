//! A check the model writes before it changes anything, where the task brings none
//! (`Config::own_check`, `--own-check`).
//!
//! Property: a task states behaviour — the commands it shows, what they should print, an old
//! invocation that must keep working, values it names — and a change is finished only when
//! that behaviour holds. Without a check from the user, the loop asks the model, before its
//! first change, for a small executable script of what the task states; the script must fail
//! on the files as they are (one that passes already checks nothing, and is sent back once),
//! and must be well-formed (`bash -n`, Python's parser). It then runs, on a throwaway copy of
//! the repository, after every change and at DONE, as the session's check: DONE needs it to
//! pass. The script lives outside the repository (the model cannot edit it into passing) and
//! is journaled ([`crate::view::Event::OwnCheck`]), so the bench and `--attempts` can run every
//! attempt's change against every attempt's check (the generated-tests vote of CodeT, Chen et
//! al. 2022: [`passes`]).
//!
//! Nothing here reads the task's words: the model states the property, the repository's
//! behaviour before the change decides whether the script tests anything.

use models::{ChatMessage, Engine, GenEvent, GenerateRequest, Prompt, Sampling};

use crate::probe::ProbeRun;
use crate::workspace::Workspace;

/// The script's name in the throwaway copy it runs in (never a file of the repository).
pub const SH_FILE: &str = ".bellows-own-check.sh";
pub const PY_FILE: &str = ".bellows-own-check.py";

/// How many scripts are asked for before the session goes on without one.
pub const TRIES: usize = 2;

/// The most tokens the script's reply may take.
pub const MAX_TOKENS: u32 = 400;

/// What the model is asked, after the first message (the task and the files). The shape it
/// shows is no task's: a command, its output compared, a message and `exit 1` on a mismatch.
pub const REQUEST: &str = "Before you change anything, write a short shell script that tests \
whether the task above is done. For each thing the task states, run the command or call the \
function it talks about and compare what it prints with what the task says it should print; \
on a mismatch print what was expected and what came, and `exit 1`. At the end, `exit 0`. The \
script must fail on the files as they are now and pass once the task is done. Use only names \
the files or the task already have. Test only what the task states. Do not change or create \
any file. The shape, for a program that should print 3:\n```sh\nout=$(python3 prog.py)\n[ \"$out\" = \"3\" ] || { echo \"expected 3, got: $out\"; exit 1; }\nexit 0\n```\nReply with your script alone, in one ```sh block, and no file path.";

/// The system prompt the script is asked under: a tester's, who changes nothing (the
/// session's own system prompt asks for changed files, and the 1.5B, asked under it, wrote
/// the change into its script).
pub const SYSTEM: &str = "You are an expert software tester. You are given a task and the \
files of a repository. You write a shell script that tests whether the task is done. You \
never change the repository's files.";

/// The request's user message: the session's first message without its closing request
/// (what to reply with: files), then [`REQUEST`].
pub fn request(first_message: &str, turn_break: &str) -> String {
    let body = first_message.replace(turn_break, "\n\n");
    let body = match body.rfind("\nReply with") {
        Some(i) => &body[..i],
        None => &body,
    };
    format!("{}\n\n{REQUEST}", body.trim_end())
}

/// What the model is told when its script passes on the files as they are.
pub const PASSES_ALREADY: &str = "That script passes on the files as they are now (exit 0), so \
it does not test what the task asks for. Write it again so that it fails now and passes once \
the task is done: compare the output with what the task says, and `exit 1` on a mismatch. \
Reply with the script alone, in one ```sh block.";

/// What the model is told when its script does not parse, or has none.
pub const DOES_NOT_PARSE: &str = "That is not a script that runs. Write it again. Reply with the \
script alone, in one ```sh block.";

/// What the model is told when its script fails for a fault of its own.
pub const BROKEN: &str = "That script fails because of an error in the script itself, not in \
the files: see its output above. Write it again, using only names the files or the task \
have. Reply with the script alone, in one ```sh block.";

/// The language a script is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    Sh,
    Python,
}

impl Lang {
    /// The script's file in the copy it runs in.
    pub fn file(self) -> &'static str {
        match self {
            Lang::Sh => SH_FILE,
            Lang::Python => PY_FILE,
        }
    }

    /// The command that runs it there.
    pub fn argv(self) -> Vec<String> {
        let interpreter = match self {
            Lang::Sh => "sh",
            Lang::Python => "python3",
        };
        vec![interpreter.to_owned(), self.file().to_owned()]
    }
}

/// A script that passed the checks of [`accept`]: it parses, and fails on the files as they
/// were when it was written (`before`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OwnCheck {
    pub lang: Lang,
    pub script: String,
    pub before: ProbeRun,
}

impl OwnCheck {
    /// The command as the session names it (`sh .bellows-own-check.sh`).
    pub fn command(&self) -> String {
        self.lang.argv().join(" ")
    }

    /// The first message's section: the script, and what it printed on the files as they are.
    pub fn section(&self) -> String {
        let fence = match self.lang {
            Lang::Sh => "sh",
            Lang::Python => "python",
        };
        format!(
            "\n\nYour check of the task, `{}` (kept outside the repository; it runs after \
             every change, and DONE needs it to pass):\n```{fence}\n{}\n```\nOn the files as \
             they are it fails ({}):\n{}\n",
            self.command(),
            self.script.trim_end(),
            self.before.status(),
            self.before.shown(),
        )
    }
}

/// Why a reply gave no script to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// No fenced `sh`/`bash`/`python` block (or an unlabelled one) in the reply.
    NoScript,
    /// The script does not parse; the parser's words.
    DoesNotParse(String),
    /// It passes (or times out) on the files as they are: it tests nothing the task asks.
    PassesAlready(ProbeRun),
    /// It fails on a fault of its own: Python code it runs raises a `NameError` or a
    /// `SyntaxError` in the script's own lines, or imports a name the repository's module
    /// does not have and the task never names ([`broken`]).
    Broken(ProbeRun),
    /// The throwaway copy could not be made (too many or too large files).
    NoCopy,
}

impl Rejected {
    /// The journal's name for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Rejected::NoScript => "no_script",
            Rejected::DoesNotParse(_) => "does_not_parse",
            Rejected::PassesAlready(_) => "passes_already",
            Rejected::Broken(_) => "broken",
            Rejected::NoCopy => "no_copy",
        }
    }

    /// What the model is told before it tries again; `None` when trying again cannot help.
    pub fn retry(&self) -> Option<&'static str> {
        match self {
            Rejected::NoScript | Rejected::DoesNotParse(_) => Some(DOES_NOT_PARSE),
            Rejected::PassesAlready(_) => Some(PASSES_ALREADY),
            Rejected::Broken(_) => Some(BROKEN),
            Rejected::NoCopy => None,
        }
    }
}

/// The script a reply holds: its first fenced block labelled `sh`, `bash`, `shell` or
/// `python`/`py`, else its only unlabelled block read by its first line (a `#!` line or
/// nothing to tell: shell). `None` when it holds none or the block is empty.
pub fn extract(reply: &str) -> Option<(Lang, String)> {
    let mut blocks: Vec<(Option<Lang>, String)> = Vec::new();
    let mut open: Option<(Option<Lang>, String)> = None;
    let mut labelled_other = false;
    for line in reply.lines() {
        let t = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = t.strip_prefix("```") {
                    let info = info.trim().to_ascii_lowercase();
                    let lang = match info.as_str() {
                        "sh" | "bash" | "shell" | "console" => Some(Lang::Sh),
                        "python" | "py" | "python3" => Some(Lang::Python),
                        "" => None,
                        _ => {
                            labelled_other = true;
                            None
                        }
                    };
                    open = Some((lang, String::new()));
                }
            }
            Some((lang, mut body)) => {
                if t.starts_with("```") {
                    blocks.push((lang, body));
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((lang, body));
                }
            }
        }
    }
    // A reply cut before its closing fence still holds its script.
    if let Some(b) = open {
        blocks.push(b);
    }
    if let Some((lang, body)) = blocks.iter().find_map(|(l, b)| Some(((*l)?, b))) {
        return (!body.trim().is_empty()).then(|| (lang, body.clone()));
    }
    if labelled_other || blocks.len() != 1 {
        return None;
    }
    let body = blocks.pop()?.1;
    let first = body.lines().next().unwrap_or("");
    let lang = if first.starts_with("#!") && first.contains("python")
        || body
            .lines()
            .any(|l| l.starts_with("import ") || l.starts_with("from "))
    {
        Lang::Python
    } else {
        Lang::Sh
    };
    (!body.trim().is_empty()).then_some((lang, body))
}

/// Judges a reply: its script must parse and fail on the files of `ws` as they are now, and
/// not for a fault of its own ([`broken`]). `task` is the task's text.
pub fn accept(ws: &Workspace, task: &str, reply: &str) -> Result<OwnCheck, Rejected> {
    let (lang, script) = extract(reply).ok_or(Rejected::NoScript)?;
    if let Some(why) = crate::lint::check(lang.file(), script.as_bytes()) {
        return Err(Rejected::DoesNotParse(why));
    }
    let before = run(ws, lang, &script).ok_or(Rejected::NoCopy)?;
    if before.code == Some(0) || before.timed_out {
        return Err(Rejected::PassesAlready(before));
    }
    if broken(&before.output, task) {
        return Err(Rejected::Broken(before));
    }
    Ok(OwnCheck {
        lang,
        script,
        before,
    })
}

/// Whether a script's output shows it failed on a fault of its own rather than the
/// repository's: the last frame of a Python traceback is the script's own code (`<string>`
/// of `python3 -c`, or the script's file) and the error is a `NameError`, a `SyntaxError` or
/// an `IndentationError` — a name it never bound, code that does not parse — or an
/// `ImportError` of a name the task does not name (a name the task asks for is missing
/// before the change by rights).
pub fn broken(output: &str, task: &str) -> bool {
    if shell_not_found(output, task) {
        return true;
    }
    let lines: Vec<&str> = output.lines().collect();
    let Some(at) = lines
        .iter()
        .rposition(|l| l.starts_with("Traceback (most recent call last)"))
    else {
        return false;
    };
    let tail = &lines[at..];
    let last_frame = tail
        .iter()
        .rev()
        .find(|l| l.trim_start().starts_with("File \""))
        .copied()
        .unwrap_or("");
    let own = last_frame.contains("\"<string>\"")
        || last_frame.contains(SH_FILE)
        || last_frame.contains(PY_FILE);
    // A SyntaxError's report names the file without a traceback frame of code that ran.
    let error = tail
        .iter()
        .rev()
        .find(|l| !l.starts_with(' ') && l.contains("Error"))
        .copied()
        .unwrap_or("");
    if error.starts_with("SyntaxError") || error.starts_with("IndentationError") {
        return own || tail.iter().any(|l| l.contains("\"<string>\""));
    }
    if !own {
        return false;
    }
    if error.starts_with("NameError") {
        return true;
    }
    if let Some(rest) = error.strip_prefix("ImportError: cannot import name ") {
        let name = rest.split('\'').nth(1).unwrap_or("");
        return !name.is_empty() && !task.contains(name);
    }
    false
}

/// The shell ran the script and found no command by a bare name on one of the script's own
/// lines (`.bellows-own-check.sh: 3: ensure_dir: not found` from dash, `… line 3: ensure_dir:
/// command not found` from bash) that the task does not name: a function of the repository's
/// called without sourcing its file, a tool the machine lacks. A path (`./tool.sh`) is a file
/// the task may ask to create, and a name the task gives may be what it asks for.
fn shell_not_found(output: &str, task: &str) -> bool {
    output.lines().any(|l| {
        let Some(rest) = l.strip_prefix(SH_FILE).and_then(|r| r.strip_prefix(':')) else {
            return false;
        };
        let rest = rest
            .strip_suffix(": not found")
            .or_else(|| rest.strip_suffix(": command not found"));
        let Some(rest) = rest else {
            return false;
        };
        let name = rest.rsplit(": ").next().unwrap_or("").trim();
        !name.is_empty() && !name.contains('/') && !task.contains(name)
    })
}

/// Runs `script` on a throwaway copy of `ws`'s files (confined like the task's commands,
/// [`crate::probe::scratch_copy`]); `None` when the copy cannot be made.
pub fn run(ws: &Workspace, lang: Lang, script: &str) -> Option<ProbeRun> {
    let (dir, scratch) = crate::probe::scratch_copy(ws)?;
    std::fs::write(dir.path().join(lang.file()), script).ok()?;
    let argv = lang.argv();
    let out = scratch.run(&argv).ok()?;
    Some(ProbeRun {
        command: argv.join(" "),
        code: out.code,
        timed_out: out.timed_out,
        output: crate::observe::head_tail(&out.output, crate::probe::OUTPUT_CHARS, None),
    })
}

/// Whether `check` passes on `ws` as it is now.
pub fn passes(ws: &Workspace, check: &OwnCheck) -> bool {
    run(ws, check.lang, &check.script).is_some_and(|r| r.code == Some(0) && !r.timed_out)
}

/// One reply that was asked for a script, and what came of it.
#[derive(Debug, Clone)]
pub struct Asked {
    pub raw: String,
    /// `kept`, or [`Rejected::as_str`].
    pub verdict: &'static str,
    pub check: Option<OwnCheck>,
    pub timings: models::Timings,
}

/// Generation failed while the script was asked for.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Engine(#[from] models::EngineError),
    #[error("generation failed: {0}")]
    Generation(String),
}

/// Asks `engine` for the script, after `messages` (the session's system prompt and first
/// message), up to [`TRIES`] times: each rejected reply is answered with why, and asked again.
/// Returns the check kept, if any, and each reply with what came of it (journaled by the loop
/// as `Event::OwnCheck`).
pub async fn write(
    engine: &dyn Engine,
    ws: &Workspace,
    task: &str,
    mut messages: Vec<ChatMessage>,
    sampling: &Sampling,
    warmer: f32,
) -> Result<(Option<OwnCheck>, Vec<Asked>), AskError> {
    let mut events = Vec::new();
    for n in 0..TRIES {
        // A greedy model asked again writes the same script again: the retry is sampled
        // warmer, with a seed of its own.
        let sampling = if n == 0 || warmer <= 0.0 {
            sampling.clone()
        } else {
            Sampling {
                temperature: sampling.temperature.max(warmer),
                seed: Some(sampling.seed.unwrap_or(0).wrapping_add(n as u32 + 1)),
                ..sampling.clone()
            }
        };
        let req = GenerateRequest {
            prompt: Prompt::Chat {
                messages: messages.clone(),
                tools: Vec::new(),
            },
            sampling,
            max_tokens: Some(MAX_TOKENS),
            stop: Vec::new(),
            grammar: None,
            logprobs: None,
        };
        let mut generation = engine.generate(req).await?;
        let (mut raw, mut timings) = (String::new(), models::Timings::default());
        while let Some(ev) = generation.next().await {
            match ev {
                GenEvent::Text { piece, .. } => raw.push_str(&piece),
                GenEvent::Done { timings: t, .. } => timings = t,
                GenEvent::Failed { error, .. } => return Err(AskError::Generation(error)),
            }
        }
        let verdict = accept(ws, task, &raw);
        events.push(Asked {
            raw: raw.clone(),
            verdict: match &verdict {
                Ok(_) => "kept",
                Err(r) => r.as_str(),
            },
            check: verdict.as_ref().ok().cloned(),
            timings,
        });
        let retry = match verdict {
            Ok(check) => return Ok((Some(check), events)),
            Err(r) => r.retry(),
        };
        let Some(retry) = retry else { break };
        messages.push(ChatMessage::new("assistant", raw));
        messages.push(ChatMessage::new("user", retry));
    }
    Ok((None, events))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).unwrap();
        }
        let mut ws = Workspace::new(dir.path()).unwrap();
        ws.confinement = crate::sandbox::Confinement::Unconfined;
        (dir, ws)
    }

    #[test]
    fn extract_takes_the_first_labelled_script_block() {
        let reply = "Here:\n```text\nnot this\n```\n```python\nimport sys\nsys.exit(1)\n```\n";
        assert_eq!(
            extract(reply),
            Some((Lang::Python, "import sys\nsys.exit(1)\n".to_owned()))
        );
        let reply = "```bash\ntest \"$(sh a.sh)\" = 3\n```";
        assert_eq!(
            extract(reply),
            Some((Lang::Sh, "test \"$(sh a.sh)\" = 3\n".to_owned()))
        );
    }

    #[test]
    fn extract_reads_an_unlabelled_block_by_its_lines_and_refuses_prose() {
        assert_eq!(
            extract("```\nfrom app import f\nassert f() == 2\n```").map(|(l, _)| l),
            Some(Lang::Python)
        );
        assert_eq!(
            extract("```\ngrep -q x a.txt\n```").map(|(l, _)| l),
            Some(Lang::Sh)
        );
        assert_eq!(extract("The task is done when it prints 3."), None);
        assert_eq!(extract("```json\n{}\n```"), None);
        assert_eq!(extract("```sh\n\n```"), None);
        // Cut before its closing fence: the lines written are the script.
        assert_eq!(
            extract("```sh\nexit 1\n"),
            Some((Lang::Sh, "exit 1\n".to_owned()))
        );
    }

    #[test]
    fn a_script_that_fails_now_is_kept_with_what_it_printed() {
        let (_d, ws) = repo(&[("count.sh", "echo 2\n")]);
        let reply =
            "```sh\nout=$(sh count.sh)\n[ \"$out\" = 3 ] || { echo \"got $out\"; exit 1; }\n```";
        let c = accept(&ws, "", reply).unwrap();
        assert_eq!(c.lang, Lang::Sh);
        assert_eq!(c.before.code, Some(1));
        assert!(c.before.output.contains("got 2"), "{}", c.before.output);
        assert!(c.section().contains("sh .bellows-own-check.sh"));
        // Once the file is as the task says, it passes; the repository never holds it.
        std::fs::write(ws.root().join("count.sh"), "echo 3\n").unwrap();
        assert!(passes(&ws, &c));
        assert!(!ws.root().join(SH_FILE).exists());
    }

    #[test]
    fn a_script_that_passes_already_or_does_not_parse_is_refused() {
        let (_d, ws) = repo(&[("count.sh", "echo 3\n")]);
        let reply = "```sh\n[ \"$(sh count.sh)\" = 3 ]\n```";
        assert!(matches!(
            accept(&ws, "", reply),
            Err(Rejected::PassesAlready(r)) if r.code == Some(0)
        ));
        assert!(matches!(
            accept(&ws, "", "```sh\nif then fi (\n```"),
            Err(Rejected::DoesNotParse(_))
        ));
        assert!(matches!(
            accept(&ws, "", "```python\ndef f(:\n```"),
            Err(Rejected::DoesNotParse(_))
        ));
        assert_eq!(
            accept(&ws, "", "no script").unwrap_err(),
            Rejected::NoScript
        );
    }

    #[test]
    fn a_fault_of_the_scripts_own_is_told_from_the_repositorys() {
        let own = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nNameError: name 'Order' is not defined\n";
        assert!(broken(own, "List the orders newest first."));
        // The same error raised in the repository's code is the repository's.
        let repo = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n  File \"/tmp/x/orders.py\", line 4, in load\nNameError: name 'rows' is not defined\n";
        assert!(!broken(repo, "List the orders newest first."));
        // A name the task asks for is missing before the change by rights.
        let import = "Traceback (most recent call last):\n  File \".bellows-own-check.py\", line 1, in <module>\nImportError: cannot import name 'slugify' from 'text' (/tmp/x/text.py)\n";
        assert!(!broken(import, "Add a function slugify to text.py."));
        assert!(broken(import, "Make titles lower case."));
        let syntax = "  File \"<string>\", line 1\n    print(\n         ^\nSyntaxError: '(' was never closed\n";
        assert!(!broken(syntax, ""), "no traceback line: not read");
        let syntax = format!("Traceback (most recent call last):\n{syntax}");
        assert!(broken(&syntax, ""));
        assert!(!broken("expected 3, got: 2\n", ""));
        // A shell function of the repository called without its file sourced.
        let dash = ".bellows-own-check.sh: 4: ensure_dir: not found\nexpected photos\n";
        assert!(broken(dash, "`sh archive.sh photos/` writes backups/.tar"));
        let bash = ".bellows-own-check.sh: line 4: ensure_dir: command not found\n";
        assert!(broken(bash, ""));
        // A script the task asks for, not there yet: missing by rights.
        let path = ".bellows-own-check.sh: 1: ./tool.sh: not found\n";
        assert!(!broken(path, "Create tool.sh that prints the date."));
        assert!(!broken(
            ".bellows-own-check.sh: 2: slugify: not found\n",
            "Add a slugify command."
        ));
    }

    #[test]
    fn what_a_check_writes_stays_in_its_copy() {
        let (_d, ws) = repo(&[("data.txt", "keep\n")]);
        let reply = "```sh\necho changed > data.txt\nexit 1\n```";
        let c = accept(&ws, "", reply).unwrap();
        assert!(!passes(&ws, &c));
        assert_eq!(
            std::fs::read_to_string(ws.root().join("data.txt")).unwrap(),
            "keep\n"
        );
    }
}
