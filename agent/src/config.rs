//! [`Config`]: one session's settings, shared by the loop, resume, attempts and the bench.

use models::Sampling;

use crate::policy::Policy;
use crate::prompt::{self, GrammarChoice};

/// [`Config::stuck_temperature`] by default.
pub const DEFAULT_STUCK_TEMPERATURE: f32 = 0.6;

/// [`crate::whole::LongFiles::over`] by default, in lines: about 600 tokens of code written whole,
/// with room in a 1,024-token reply for the change and a word around it. No file of the
/// development or frozen suites but `benches/agent-tasks-long` is this long, so their first
/// messages are as before. By default a long file's change is written as the functions that
/// change ([`crate::whole::LongEdit::Definitions`]): on the long-file suite the 1.5B solved
/// 2/4 so, 1/4 writing files whole and 0/4 asked for edit blocks (benches/README.md).
pub const DEFAULT_LONG_FILE_LINES: usize = 60;

/// Judges a tree outside the session, where the caller holds a check the model never sees
/// (the bench's `verify.sh`): asked on every refused DONE, its answer is journaled
/// ([`crate::view::Event::Witnessed`]) and changes nothing in the session.
pub trait DoneWitness: Send + Sync + std::fmt::Debug {
    /// Whether `ws` as it is now passes; `None` where it could not be judged.
    fn passes(&self, ws: &crate::workspace::Workspace) -> Option<bool>;
}

/// One session's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub task: String,
    pub policy: Policy,
    pub grammar: GrammarChoice,
    pub sampling: Sampling,
    pub max_turns: u32,
    pub actions_per_turn: usize,
    /// How the model acts: verb lines and SEARCH/REPLACE, or whole files.
    pub protocol: prompt::Protocol,
    /// How the system prompt teaches the text protocol (the profile's `prompt`).
    pub prompt_style: codec::registry::PromptStyle,
    /// Run after DONE; a failure is fed back and counted as a rejected false success.
    pub verify: Option<Vec<String>>,
    pub stall_turns: u32,
    pub loop_repeats: u32,
    /// Prompt plus generated tokens over the whole session.
    pub token_budget: Option<u64>,
    /// Tokens kept free for the reply; the prompt never exceeds `n_ctx - reply_reserve`.
    pub reply_reserve: u32,
    /// Characters of one observation's output before head/tail truncation.
    pub output_budget: usize,
    /// Characters of the first message's start context (repository map, and the files the
    /// task names or whose identifiers it mentions); never more than half the prompt's room
    /// (at about three characters a token).
    pub context_budget: Option<usize>,
    /// The whole protocol's first message sent as two: the files, an assistant's
    /// acknowledgement, then the task alone (`false`: one message, the task before and after
    /// the files). The two layouts solve different tasks on the agent suite, so attempts
    /// alternate them ([`crate::attempts::layout`]).
    pub files_apart: bool,
    /// The whole protocol's first message shows whole only the files the task points at (the
    /// files it names, what they import or source, what defines its identifiers), sources
    /// before tests; the rest only in the map. The 1.5B, shown every file of backoff-cap,
    /// changed settings.ini's numbers instead of retry.py; attempts 3 and 4 focus
    /// ([`crate::attempts::focus`]). Where the task's wrong command runs few functions, only
    /// those are shown ([`crate::whole::functions_message`]).
    pub focus: bool,
    /// A focused first message that shows the one function where the task's value first
    /// goes wrong ([`crate::origin`]) shows it without its body, to be written anew
    /// ([`crate::splice::without_body`]): shown the body, the 1.5B wrote it back unchanged in
    /// eight of eight samples of timer-durations' `parse`, at temperatures 0 to 0.9.
    /// Even-numbered focused attempts ([`crate::attempts::anew`]).
    pub anew: bool,
    /// After the first turn, each prompt is the first message made again from the files as
    /// they are now, with what came of the earlier replies told inside it, instead of the
    /// conversation so far ([`crate::history::restated`]): nothing the model wrote or was told
    /// stands last in the prompt for it to copy. The 0.5B answers a history with a copy of its
    /// last observation (`changed hello.txt <output> …`).
    pub restate: bool,
    /// The whole protocol's first message asks for the change in words before the files
    /// ([`crate::whole::SAY_FIRST`]).
    pub say_first: bool,
    /// In the whole protocol, how a file shown with more lines than a limit is to be changed
    /// rather than written whole ([`crate::whole::LongFiles`]); `None`: every file is written
    /// whole. A file written whole anyway is still taken.
    pub long_files: Option<crate::whole::LongFiles>,
    /// Without `verify`, ask the model for a check of what the task states before its first
    /// change, and hold DONE to it ([`crate::owncheck`]).
    pub own_check: bool,
    /// Syntax-check the files the session writes ([`crate::lint`]): a failure is told after
    /// the change, and a DONE is refused while one stands.
    pub lint: bool,
    /// Run the commands the task names ([`crate::probe`]) on a throwaway copy: their output
    /// joins the first message and follows each change, and a DONE is refused while every
    /// command the task calls wrong prints what it printed before. Also the DONE checks read
    /// from the task's words ([`crate::asks`]).
    pub probes: bool,
    /// The lesser tier: DONE rules and first-message notes that read a kind of task's
    /// wording (what it says to delete, create, rename, pass or print; its example; the
    /// option it adds) rather than a property of every task's repository, commands and diff
    /// ([`crate::run`]'s `lesser_refusal`). Only with `probes`. Off, the DONE gate is the
    /// general rules alone (issue #48, item 2: measured both ways in benches/README.md).
    pub wording_rules: bool,
    /// Judges each refused DONE's tree, for the figures alone ([`DoneWitness`]); `None`
    /// outside the bench.
    pub witness: Option<std::sync::Arc<dyn DoneWitness>>,
    /// Without a check (`verify`), find the repository's own test scripts and hold DONE to
    /// them ([`crate::found`]); only with `probes`.
    pub found_tests: bool,
    /// After a turn that made no progress, the next reply is sampled at least this warm
    /// (more after each further one; see `record::Tally::sampling`); 0 never warms.
    pub stuck_temperature: f32,
    /// Fired on Ctrl-C: halts the generation or command in flight and stops the session.
    pub interrupt: crate::Interrupt,
}

impl Config {
    /// The whole protocol's first-message layout this configuration asks for.
    pub fn layout(&self) -> crate::whole::Layout {
        crate::whole::Layout {
            apart: self.files_apart,
            focus: self.focus,
            say_first: self.say_first,
            long: self.long_files,
        }
    }

    pub fn new(task: &str, policy: Policy) -> Config {
        Config {
            task: task.to_owned(),
            policy,
            grammar: GrammarChoice::Off,
            sampling: Sampling::default(),
            max_turns: 30,
            actions_per_turn: 1,
            protocol: prompt::Protocol::Text,
            prompt_style: codec::registry::PromptStyle::Full,
            verify: None,
            stall_turns: 3,
            loop_repeats: 3,
            token_budget: None,
            reply_reserve: 512,
            output_budget: crate::observe::DEFAULT_OUTPUT_BUDGET,
            context_budget: None,
            files_apart: false,
            focus: false,
            anew: false,
            restate: false,
            say_first: false,
            long_files: Some(crate::whole::LongFiles {
                over: DEFAULT_LONG_FILE_LINES,
                by: crate::whole::LongEdit::Definitions,
            }),
            own_check: false,
            lint: true,
            probes: true,
            wording_rules: true,
            witness: None,
            found_tests: true,
            stuck_temperature: DEFAULT_STUCK_TEMPERATURE,
            interrupt: crate::Interrupt::new(),
        }
    }
}
