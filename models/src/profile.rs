//! Model profiles: `models/profiles/NAME.toml`, one per tuned model.
//!
//! A profile says how to recognise its model (GGUF `general.name`, or the file's sha256), the
//! context size, an optional chat template override, stop strings, the protocol the model
//! should speak (`text`, bellows' own action lines, or a native tool-call format name such as
//! `hermes`), default sampling, the grammar mode, and the conversion rate measured when it was
//! tuned. The built-in profiles are compiled in; a user may name one or pass a path to a file.
//!
//! ```toml
//! description = "SmolLM2-135M-Instruct"
//! [match]
//! general_name = ["Smollm2 135M 8k Lc100K Mix1 Ep2"]   # exact `general.name` values
//! name_contains = ["smollm2", "135m"]                   # all present, case-insensitive
//! sha256 = ["b179c952..."]                              # the whole file's digest
//! [context]
//! n_ctx = 8192
//! [template]
//! chat_template = "..."   # optional; absent: the GGUF's own
//! [generation]
//! stop = ["<|im_end|>"]
//! protocol = "text"
//! grammar = "off"         # off | lazy | strict
//! prompt = "full"         # full | compact | example: how the text protocol is taught
//! tools = "template"      # template | system | example: how client tools are shown
//! actions_per_turn = 1    # stop generating after this many actions (0: no limit)
//! agent_protocol = "text" # text | whole | tools: how `bellows agent` asks the model to act
//! agent_restate = false   # true: each agent turn after the first restates the first message
//! reasoning = ["[THINK]", "[/THINK]"]  # this pair only; [] for none; absent: every known
//!                                      # family's markers (`codec::KNOWN_REASONING_MARKERS`)
//! [sampling]
//! temperature = 0.0       # also top_p, top_k, min_p, repeat_penalty, frequency_penalty,
//!                         # presence_penalty, seed
//! dry_multiplier = 0.8    # llama.cpp's DRY sampler (0.0, the default, is off); also
//! dry_base = 1.75         # dry_allowed_length (2), dry_penalty_last_n (-1: the whole
//!                         # context; 0: off) and dry_sequence_breakers (["\n", ":", "\"", "*"])
//! [measured]              # written by `bellows tune --write`
//! conversion_rate = 0.42
//! prompts_sha256 = "..."
//! agent_suite = "benches/agent-tasks"  # the agent bench's figures, from benches/README.md:
//! agent_tasks = 29                     # also agent_solved, agent_pass_at_1, agent_attempts,
//! agent_solved = 24                    # agent_false_successes, agent_date,
//!                                      # agent_bellows_version, agent_binary
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::engine::{Dry, Sampling};
use crate::gguf::GgufInfo;

/// The profiles that ship with bellows: (name, TOML text).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "smollm2-135m-instruct",
        include_str!("../profiles/smollm2-135m-instruct.toml"),
    ),
    ("gemma3-270m", include_str!("../profiles/gemma3-270m.toml")),
    (
        "qwen2.5-coder-0.5b-instruct",
        include_str!("../profiles/qwen2.5-coder-0.5b-instruct.toml"),
    ),
    (
        "qwen2.5-coder-1.5b-instruct",
        include_str!("../profiles/qwen2.5-coder-1.5b-instruct.toml"),
    ),
];

/// Files above this size are not hashed just to find a profile by sha256: reading gigabytes
/// at every start would cost more than the match is worth.
const SHA256_MATCH_LIMIT: u64 = 2 << 30;

/// Why a profile could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("profile file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("profile {name}: {message}")]
    Parse { name: String, message: String },
    #[error("no profile named '{name}' (built in: {known})")]
    Unknown { name: String, known: String },
    #[error("profile {name}: {what}")]
    Invalid { name: String, what: String },
}

/// How the grammar is applied by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GrammarMode {
    /// No grammar unless the request brings one.
    #[default]
    Off,
    /// The protocol grammar switches on at a trigger string.
    Lazy,
    /// The protocol grammar constrains every token.
    Strict,
}

impl GrammarMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            GrammarMode::Off => "off",
            GrammarMode::Lazy => "lazy",
            GrammarMode::Strict => "strict",
        }
    }
}

/// What a profile says about reasoning markers (`generation.reasoning`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReasoningSpec {
    /// Not named: the decoder's default set, the markers of every known family
    /// (`<think>`…`</think>`, `[THINK]`…`[/THINK]`, …).
    #[default]
    Known,
    /// `[open, close]`: this pair only.
    Pair { open: String, close: String },
    /// `[]`: the model does not reason, and every marker is plain text.
    Off,
}

impl ReasoningSpec {
    pub fn is_off(&self) -> bool {
        matches!(self, ReasoningSpec::Off)
    }
}

/// A parsed profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The file stem, or "generic".
    pub name: String,
    pub description: String,
    pub matcher: MatchRule,
    /// Context size to use when the user names none.
    pub n_ctx: Option<u32>,
    /// Replaces the GGUF's chat template.
    pub chat_template: Option<String>,
    /// Stop strings added to every request.
    pub stop: Vec<String>,
    /// `text` or a native format name (`hermes`, `qwen3_xml`, ...).
    pub protocol: String,
    pub grammar: GrammarMode,
    /// How the model's reasoning is marked: the known families' markers unless the profile
    /// names one pair, or none; text between them is the model's reasoning, never decoded
    /// into actions.
    pub reasoning: ReasoningSpec,
    /// Replies start inside a reasoning block (the template opened it in the prompt).
    pub starts_in_reasoning: bool,
    /// Default sampling for requests that set none.
    pub sampling: Sampling,
    /// How the text protocol is taught: `full`, `compact` or `example` (see
    /// [`PROMPT_STYLES`]).
    pub prompt: String,
    /// How client tools reach the model under `tool_choice: "auto"`: `template` (the chat
    /// template's `tools`, else a system message), `system` (always a system message) or
    /// `example` (a system message with one worked call). See [`TOOL_PRESENTATIONS`].
    pub tools: String,
    /// Actions to take from one reply before generation stops (`None`: the caller's default;
    /// `Some(0)`: no limit).
    pub actions_per_turn: Option<u32>,
    /// How `bellows agent` asks the model to act: `text` (verb lines, SEARCH/REPLACE),
    /// `whole` (files written whole after their path) or `tools` (the model's own tool calls
    /// through its chat template). See [`AGENT_PROTOCOLS`].
    pub agent_protocol: String,
    /// `bellows agent` sends the first message again, made from the files as they are, after
    /// each turn instead of the conversation (`agent::Config::restate`).
    pub agent_restate: bool,
    /// What profile tuning measured with these settings (`bellows tune --write`).
    pub measured: Measured,
}

/// The system-prompt styles a profile may name (`[generation] prompt`).
pub const PROMPT_STYLES: &[&str] = &["full", "compact", "example"];
/// The tool presentations a profile may name (`[generation] tools`).
pub const TOOL_PRESENTATIONS: &[&str] = &["template", "system", "example"];
/// The agent protocols a profile may name (`[generation] agent_protocol`).
pub const AGENT_PROTOCOLS: &[&str] = &["text", "whole", "tools"];

/// The `[measured]` table: figures from `bellows tune` (and, for a coder model, the agent
/// bench), and what they were measured on. Every field is optional; rates lie in 0..=1.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// Replies holding at least one valid, non-echo action.
    pub conversion_rate: Option<f64>,
    /// Valid actions among all attempted ones (valid + failed).
    pub valid_action_rate: Option<f64>,
    /// Replies whose first valid action calls an expected tool, among replies with an
    /// expectation.
    pub right_action_rate: Option<f64>,
    /// ... and with the expected arguments.
    pub exact_action_rate: Option<f64>,
    /// Client-tool prompts under `tool_choice: "auto"` that got a valid call.
    pub auto_tool_call_rate: Option<f64>,
    /// Actions that copied the prompt's help text.
    pub echo_decodes: Option<u64>,
    /// Generated tokens per reply that acted (what one action costs).
    pub tokens_per_action: Option<f64>,
    pub tokens_per_second: Option<f64>,
    /// Replies measured.
    pub replies: Option<u64>,
    /// The configuration chosen, as `bellows tune` names it.
    pub configuration: Option<String>,
    /// The prompt set, its sha256, the date and the bellows version of the measurement.
    pub prompts: Option<String>,
    pub prompts_sha256: Option<String>,
    pub date: Option<String>,
    pub bellows_version: Option<String>,
    /// A stored corpus the rate was measured on (older profiles).
    pub corpus: Option<String>,
    /// What `bellows agent bench` measured with this profile: the suite (a folder of tasks),
    /// its task count, the tasks solved and those solved by the first attempt alone (pass@1),
    /// with `agent_attempts` attempts per task, and the DONEs `verify.sh` refuted. Written by
    /// hand from `benches/README.md` (the bench prints the figures; nothing writes them here),
    /// with the date, bellows version and binary of the run. The figures a coder profile is
    /// chosen by: `bellows agent` and `/v1/models` report them.
    pub agent_suite: Option<String>,
    pub agent_tasks: Option<u64>,
    pub agent_solved: Option<u64>,
    pub agent_pass_at_1: Option<u64>,
    pub agent_attempts: Option<u64>,
    pub agent_false_successes: Option<u64>,
    pub agent_date: Option<String>,
    pub agent_bellows_version: Option<String>,
    pub agent_binary: Option<String>,
}

impl Measured {
    /// One line on the agent bench's figures, when the profile has them:
    /// `agent bench benches/agent-tasks: solved 24/29, pass@1 22/29 (4 attempts, 0 false
    /// successes; 2026-12-06, bellows 0.1.0)`.
    pub fn agent_summary(&self) -> Option<String> {
        let (suite, tasks, solved) = (
            self.agent_suite.as_deref()?,
            self.agent_tasks?,
            self.agent_solved?,
        );
        let mut line = format!("agent bench {suite}: solved {solved}/{tasks}");
        if let Some(p) = self.agent_pass_at_1 {
            line.push_str(&format!(", pass@1 {p}/{tasks}"));
        }
        let mut how = Vec::new();
        if let Some(a) = self.agent_attempts {
            how.push(format!("{a} attempts"));
        }
        if let Some(f) = self.agent_false_successes {
            how.push(format!("{f} false successes"));
        }
        let when: Vec<String> = [
            self.agent_date.clone(),
            self.agent_bellows_version
                .as_ref()
                .map(|v| format!("bellows {v}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let inner = match (how.is_empty(), when.is_empty()) {
            (true, true) => String::new(),
            (false, true) => how.join(", "),
            (true, false) => when.join(", "),
            (false, false) => format!("{}; {}", how.join(", "), when.join(", ")),
        };
        if !inner.is_empty() {
            line.push_str(&format!(" ({inner})"));
        }
        Some(line)
    }
}

/// How a profile recognises its model.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchRule {
    #[serde(default)]
    pub general_name: Vec<String>,
    #[serde(default)]
    pub name_contains: Vec<String>,
    #[serde(default)]
    pub sha256: Vec<String>,
}

impl MatchRule {
    fn matches_name(&self, name: Option<&str>) -> bool {
        let Some(name) = name else { return false };
        if self.general_name.iter().any(|n| n == name) {
            return true;
        }
        let lower = name.to_lowercase();
        !self.name_contains.is_empty()
            && self
                .name_contains
                .iter()
                .all(|part| lower.contains(&part.to_lowercase()))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    description: String,
    #[serde(default, rename = "match")]
    matcher: MatchRule,
    #[serde(default)]
    context: ContextSection,
    #[serde(default)]
    template: TemplateSection,
    #[serde(default)]
    generation: GenerationSection,
    #[serde(default)]
    sampling: SamplingSection,
    #[serde(default)]
    measured: Measured,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextSection {
    n_ctx: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateSection {
    chat_template: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerationSection {
    #[serde(default)]
    stop: Vec<String>,
    #[serde(default = "default_protocol")]
    protocol: String,
    #[serde(default)]
    grammar: GrammarMode,
    /// `[open, close]` reasoning markers, or `[]` for a model that does not reason; absent:
    /// the markers of every known family.
    #[serde(default)]
    reasoning: Option<Vec<String>>,
    /// The chat template opens the reasoning block in the prompt, so replies start inside it.
    #[serde(default)]
    starts_in_reasoning: bool,
    #[serde(default = "default_prompt")]
    prompt: String,
    #[serde(default = "default_tools")]
    tools: String,
    actions_per_turn: Option<u32>,
    #[serde(default = "default_agent_protocol")]
    agent_protocol: String,
    #[serde(default)]
    agent_restate: bool,
}

impl Default for GenerationSection {
    fn default() -> Self {
        GenerationSection {
            stop: Vec::new(),
            protocol: default_protocol(),
            grammar: GrammarMode::Off,
            reasoning: None,
            starts_in_reasoning: false,
            prompt: default_prompt(),
            tools: default_tools(),
            actions_per_turn: None,
            agent_protocol: default_agent_protocol(),
            agent_restate: false,
        }
    }
}

fn default_agent_protocol() -> String {
    "text".to_owned()
}

fn default_prompt() -> String {
    "full".to_owned()
}

fn default_tools() -> String {
    "template".to_owned()
}

fn default_protocol() -> String {
    "text".to_owned()
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SamplingSection {
    temperature: Option<f32>,
    top_p: Option<f32>,
    top_k: Option<i32>,
    min_p: Option<f32>,
    repeat_penalty: Option<f32>,
    frequency_penalty: Option<f32>,
    presence_penalty: Option<f32>,
    seed: Option<u32>,
    dry_multiplier: Option<f32>,
    dry_base: Option<f32>,
    dry_allowed_length: Option<i32>,
    dry_penalty_last_n: Option<i32>,
    dry_sequence_breakers: Option<Vec<String>>,
}

impl Profile {
    /// The profile for models no profile matches: the GGUF's own template, no extra stop
    /// strings, the text protocol, greedy sampling, no grammar.
    pub fn generic() -> Profile {
        Profile {
            name: "generic".to_owned(),
            description: "defaults for a model without a profile".to_owned(),
            matcher: MatchRule::default(),
            n_ctx: None,
            chat_template: None,
            stop: Vec::new(),
            protocol: default_protocol(),
            grammar: GrammarMode::Off,
            reasoning: ReasoningSpec::Known,
            starts_in_reasoning: false,
            sampling: Sampling::default(),
            prompt: default_prompt(),
            tools: default_tools(),
            actions_per_turn: None,
            agent_protocol: default_agent_protocol(),
            agent_restate: false,
            measured: Measured::default(),
        }
    }

    /// Parses profile TOML; `name` is used for the profile's name and in errors.
    pub fn parse(name: &str, text: &str) -> Result<Profile, ProfileError> {
        let f: File = toml::from_str(text).map_err(|e| ProfileError::Parse {
            name: name.to_owned(),
            message: e.to_string(),
        })?;
        let invalid = |what: String| ProfileError::Invalid {
            name: name.to_owned(),
            what,
        };
        let d = Sampling::default();
        let s = &f.sampling;
        let sampling = Sampling {
            temperature: s.temperature.unwrap_or(d.temperature),
            top_p: s.top_p.unwrap_or(d.top_p),
            top_k: s.top_k.unwrap_or(d.top_k),
            min_p: s.min_p.unwrap_or(d.min_p),
            repeat_penalty: s.repeat_penalty.unwrap_or(d.repeat_penalty),
            frequency_penalty: s.frequency_penalty.unwrap_or(d.frequency_penalty),
            presence_penalty: s.presence_penalty.unwrap_or(d.presence_penalty),
            seed: s.seed.or(d.seed),
            logit_bias: Vec::new(),
            dry: Dry {
                multiplier: s.dry_multiplier.unwrap_or(d.dry.multiplier),
                base: s.dry_base.unwrap_or(d.dry.base),
                allowed_length: s.dry_allowed_length.unwrap_or(d.dry.allowed_length),
                penalty_last_n: s.dry_penalty_last_n.unwrap_or(d.dry.penalty_last_n),
                sequence_breakers: s
                    .dry_sequence_breakers
                    .clone()
                    .unwrap_or(d.dry.sequence_breakers),
            },
            // A request's, never a profile's: each request that wants it says so.
            ignore_eos: false,
        };
        if let Err(e) = sampling.dry.check() {
            return Err(invalid(format!("sampling.{}: {}", e.field, e.message)));
        }
        // A range check, so that NaN is refused as well.
        if !(0.0..=f32::MAX).contains(&sampling.temperature) {
            return Err(invalid(format!(
                "temperature {} is not a non-negative number",
                sampling.temperature
            )));
        }
        if !(sampling.repeat_penalty > 0.0 && sampling.repeat_penalty.is_finite()) {
            return Err(invalid("repeat_penalty must be positive".to_owned()));
        }
        if !(0.0..=1.0).contains(&sampling.top_p) || !(0.0..=1.0).contains(&sampling.min_p) {
            return Err(invalid("top_p and min_p must lie in 0..=1".to_owned()));
        }
        if f.context.n_ctx == Some(0) {
            return Err(invalid("context.n_ctx must be positive".to_owned()));
        }
        let m = &f.measured;
        for (field, rate) in [
            ("conversion_rate", m.conversion_rate),
            ("valid_action_rate", m.valid_action_rate),
            ("right_action_rate", m.right_action_rate),
            ("exact_action_rate", m.exact_action_rate),
            ("auto_tool_call_rate", m.auto_tool_call_rate),
        ] {
            if let Some(rate) = rate
                && !(0.0..=1.0).contains(&rate)
            {
                return Err(invalid(format!("measured.{field} {rate} is not in 0..=1")));
            }
        }
        if let Some(tasks) = m.agent_tasks {
            for (field, n) in [
                ("agent_solved", m.agent_solved),
                ("agent_pass_at_1", m.agent_pass_at_1),
                ("agent_false_successes", m.agent_false_successes),
            ] {
                if let Some(n) = n
                    && n > tasks
                {
                    return Err(invalid(format!(
                        "measured.{field} {n} is more than agent_tasks {tasks}"
                    )));
                }
            }
        } else if m.agent_solved.is_some() || m.agent_pass_at_1.is_some() {
            return Err(invalid(
                "measured.agent_solved and agent_pass_at_1 need agent_tasks".to_owned(),
            ));
        }
        if !AGENT_PROTOCOLS.contains(&f.generation.agent_protocol.as_str()) {
            return Err(invalid(format!(
                "generation.agent_protocol {:?} is not one of {}",
                f.generation.agent_protocol,
                AGENT_PROTOCOLS.join(", ")
            )));
        }
        if !PROMPT_STYLES.contains(&f.generation.prompt.as_str()) {
            return Err(invalid(format!(
                "generation.prompt {:?} is not one of {}",
                f.generation.prompt,
                PROMPT_STYLES.join(", ")
            )));
        }
        if !TOOL_PRESENTATIONS.contains(&f.generation.tools.as_str()) {
            return Err(invalid(format!(
                "generation.tools {:?} is not one of {}",
                f.generation.tools,
                TOOL_PRESENTATIONS.join(", ")
            )));
        }
        if f.generation.stop.iter().any(String::is_empty) {
            return Err(invalid(
                "an empty stop string would stop every generation".to_owned(),
            ));
        }
        for sha in &f.matcher.sha256 {
            if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(format!(
                    "match.sha256 '{sha}' is not 64 hex digits"
                )));
            }
        }
        let reasoning = match f.generation.reasoning.as_deref() {
            None => ReasoningSpec::Known,
            Some([]) => ReasoningSpec::Off,
            Some([open, close]) if !open.is_empty() && !close.is_empty() => ReasoningSpec::Pair {
                open: open.clone(),
                close: close.clone(),
            },
            Some(other) => {
                return Err(invalid(format!(
                    "generation.reasoning must be [] or [open, close] (non-empty), not {other:?}"
                )));
            }
        };
        if f.generation.starts_in_reasoning && reasoning.is_off() {
            return Err(invalid(
                "generation.starts_in_reasoning needs reasoning markers".to_owned(),
            ));
        }
        Ok(Profile {
            name: name.to_owned(),
            description: f.description,
            matcher: f.matcher,
            n_ctx: f.context.n_ctx,
            chat_template: f.template.chat_template,
            stop: f.generation.stop,
            protocol: f.generation.protocol,
            grammar: f.generation.grammar,
            reasoning,
            starts_in_reasoning: f.generation.starts_in_reasoning,
            sampling,
            prompt: f.generation.prompt,
            tools: f.generation.tools,
            actions_per_turn: f.generation.actions_per_turn,
            agent_protocol: f.generation.agent_protocol,
            agent_restate: f.generation.agent_restate,
            measured: f.measured,
        })
    }

    /// Loads a profile by built-in name, or from a `.toml` path.
    pub fn named(name_or_path: &str) -> Result<Profile, ProfileError> {
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            let path = Path::new(name_or_path);
            let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
                path: path.to_owned(),
                source,
            })?;
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("profile");
            return Profile::parse(stem, &text);
        }
        match BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            Some((n, text)) => Profile::parse(n, text),
            None if name_or_path == "generic" => Ok(Profile::generic()),
            None => Err(ProfileError::Unknown {
                name: name_or_path.to_owned(),
                known: BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// All built-in profiles, parsed.
    pub fn builtins() -> Result<Vec<Profile>, ProfileError> {
        BUILTIN.iter().map(|(n, t)| Profile::parse(n, t)).collect()
    }

    /// The built-in profile matching this GGUF: by `general.name` first, then by the file's
    /// sha256 (files up to 2 GiB); the generic profile when none matches.
    pub fn select(gguf: &GgufInfo) -> Result<Profile, ProfileError> {
        let builtins = Profile::builtins()?;
        if let Some(p) = builtins
            .iter()
            .find(|p| p.matcher.matches_name(gguf.name()))
        {
            return Ok(p.clone());
        }
        if builtins.iter().any(|p| !p.matcher.sha256.is_empty())
            && gguf.file_size <= SHA256_MATCH_LIMIT
            && let Ok(digest) = sha256_file(&gguf.path)
            && let Some(p) = builtins.iter().find(|p| {
                p.matcher
                    .sha256
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(&digest))
            })
        {
            return Ok(p.clone());
        }
        tracing::info!(
            path = %gguf.path.display(),
            general_name = gguf.name().unwrap_or("(none)"),
            "no profile matches this model; using the generic profile"
        );
        Ok(Profile::generic())
    }
}

/// Hex sha256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
