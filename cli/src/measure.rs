//! Live measurement: generate replies to a prompt set with the engine, decode each exactly as
//! the gateway would decode it, and score it. `bellows eval --generate` and `bellows tune`
//! are both built on [`measure`].
//!
//! A prompt line is `{"id", "messages", "tools"?, "temperature"?, "seed"?, "protocol"?,
//! "expect"?}` (the shape of `shared/corpus/dev-prompts.jsonl`). It is turned into the chat
//! request a client would send: the messages, the line's tools (or, when it has none, bellows'
//! builtin tools in the configuration's protocol: the text protocol's verbs, or the builtins
//! offered as native tools), and the configuration's sampling, grammar and action limit. The
//! request then goes through the gateway's own validation and tool plan, so what is measured
//! is what `bellows serve` does with the same profile settings.
//!
//! `expect` lists the acceptable *first* actions (`{name, arguments}`): a reply's *right
//! action* is a first valid action naming one of them; *exact* when it also equals one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::sync::Arc;
use std::time::Instant;

use codec::echo::{Acting, Echoes, Verdict};
use codec::format::FormatId;
use codec::registry::PromptStyle;
use codec::score::ReplyScore;
use codec::{Action, Event, Registry};
use gateway::api::request::ChatCompletionRequest;
use gateway::defaults::{Defaults, ToolsPresentation};
use gateway::{tools, validate};
use models::{Engine, GenEvent, GrammarMode, Prompt};
use serde_json::{Value, json};

/// One prompt of a prompt set.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptLine {
    pub id: String,
    /// OpenAI chat messages, as given.
    pub messages: Value,
    /// An OpenAI tools array; `None`: the task is for bellows' builtin tools.
    pub tools: Option<Value>,
    pub temperature: Option<f32>,
    pub seed: Option<u32>,
    /// `text`, or a native format name: the protocol the line was written for.
    pub protocol: Option<String>,
    /// Acceptable first actions.
    pub expect: Vec<Value>,
}

impl PromptLine {
    /// True when the line brings its own system message (which then teaches the protocol).
    pub fn has_system_message(&self) -> bool {
        self.messages.as_array().is_some_and(|a| {
            a.iter()
                .any(|m| m.get("role").and_then(Value::as_str) == Some("system"))
        })
    }
}

/// A prompt line that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct BadPrompt {
    /// 1-based.
    pub line: usize,
    pub error: String,
}

/// Reads a prompt set: good lines, and the bad ones with their line numbers.
pub fn read_prompts(reader: impl BufRead) -> std::io::Result<(Vec<PromptLine>, Vec<BadPrompt>)> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_prompt(&line, i + 1) {
            Ok(p) => good.push(p),
            Err(error) => bad.push(BadPrompt { line: i + 1, error }),
        }
    }
    Ok((good, bad))
}

fn parse_prompt(line: &str, line_no: usize) -> Result<PromptLine, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(m) = v else {
        return Err("not a JSON object".to_owned());
    };
    let messages = m.get("messages").cloned().unwrap_or(Value::Null);
    if messages.as_array().is_none_or(|a| a.is_empty()) {
        return Err("\"messages\" must be a non-empty array".to_owned());
    }
    let tools = match m.get("tools") {
        None | Some(Value::Null) => None,
        Some(t @ Value::Array(a)) if !a.is_empty() => Some(t.clone()),
        Some(_) => return Err("\"tools\" must be a non-empty array".to_owned()),
    };
    let expect = match m.get("expect") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err("\"expect\" must be an array of {name, arguments}".to_owned()),
    };
    let temperature = match m.get("temperature") {
        None | Some(Value::Null) => None,
        Some(t) => Some(
            t.as_f64()
                .filter(|t| *t >= 0.0)
                .ok_or("\"temperature\" must be a non-negative number")? as f32,
        ),
    };
    let seed = match m.get("seed") {
        None | Some(Value::Null) => None,
        Some(s) => Some(
            s.as_u64()
                .and_then(|s| u32::try_from(s).ok())
                .ok_or("\"seed\" must be an integer in 0..2^32")?,
        ),
    };
    Ok(PromptLine {
        id: m
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("line{line_no}"), str::to_owned),
        messages,
        tools,
        temperature,
        seed,
        protocol: m.get("protocol").and_then(Value::as_str).map(str::to_owned),
        expect,
    })
}

/// The choices a profile makes that a measurement varies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// How builtin tasks are offered: [`FormatId::Text`] (the verbs) or a native format (the
    /// builtins as native tools, calls expected in that format).
    pub protocol: FormatId,
    /// How the text protocol is taught.
    pub prompt: PromptStyle,
    /// `None`: each line's own temperature, else the profile's.
    pub temperature: Option<f32>,
    pub grammar: GrammarMode,
    /// Stop generating after this many valid actions; 0: no limit.
    pub actions_per_turn: u32,
    /// How client tools are shown under `tool_choice: "auto"`.
    pub tools: ToolsPresentation,
}

impl Config {
    /// The configuration a profile's settings make.
    pub fn of_defaults(d: &Defaults) -> Config {
        Config {
            protocol: d.protocol,
            prompt: d.prompt_style,
            temperature: Some(d.sampling.temperature),
            grammar: d.grammar,
            actions_per_turn: d.actions_per_turn.unwrap_or(0),
            tools: d.tools_presentation,
        }
    }

    /// A short, stable name: `text/full/T0/strict/a1/template`.
    pub fn key(&self) -> String {
        let t = match self.temperature {
            None => "Tline".to_owned(),
            Some(t) => format!("T{}", fmt_temp(t)),
        };
        format!(
            "{}/{}/{t}/{}/a{}/{}",
            self.protocol.as_str(),
            self.prompt.as_str(),
            self.grammar.as_str(),
            self.actions_per_turn,
            self.tools.as_str()
        )
    }

    /// Parses [`Config::key`].
    pub fn parse_key(key: &str) -> Option<Config> {
        let parts: Vec<&str> = key.split('/').collect();
        let [protocol, prompt, t, grammar, a, tools] = parts.as_slice() else {
            return None;
        };
        let temperature = match t.strip_prefix('T')? {
            "line" => None,
            t => Some(t.parse::<f32>().ok()?),
        };
        let grammar = match *grammar {
            "off" => GrammarMode::Off,
            "lazy" => GrammarMode::Lazy,
            "strict" => GrammarMode::Strict,
            _ => return None,
        };
        Some(Config {
            protocol: FormatId::parse(protocol)?,
            prompt: PromptStyle::parse(prompt)?,
            temperature,
            grammar,
            actions_per_turn: a.strip_prefix('a')?.parse().ok()?,
            tools: ToolsPresentation::parse(tools)?,
        })
    }

    /// The request defaults this configuration makes on top of the profile's.
    pub fn defaults(&self, base: &Defaults) -> Defaults {
        let mut d = base.clone();
        d.protocol = self.protocol;
        d.prompt_style = self.prompt;
        d.grammar = self.grammar;
        d.tools_presentation = self.tools;
        d.actions_per_turn = Some(self.actions_per_turn);
        if let Some(t) = self.temperature {
            d.sampling.temperature = t;
        }
        d
    }
}

/// `0.7` → `0.7`, `0` → `0`.
fn fmt_temp(t: f32) -> String {
    let s = format!("{t:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// How to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Reply length limit in tokens.
    pub max_tokens: u32,
    /// Replies per prompt at a temperature above 0 (greedy replies are generated once).
    pub samples: u32,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            max_tokens: 192,
            samples: 1,
        }
    }
}

/// One generated, decoded and scored reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub prompt_id: String,
    pub sample: u32,
    pub raw: String,
    /// `eog`, `stop`, `max_tokens`, … or `failed: …` when the engine failed.
    pub stop: String,
    pub prompt_tokens: u32,
    pub generated_tokens: u32,
    /// Seconds from request to last token.
    pub seconds: f64,
    pub temperature: f32,
    pub seed: u32,
    /// The line had client tools.
    pub client: bool,
    /// Valid actions that are not echoes, in order.
    pub actions: Vec<Value>,
    pub echoes: u32,
    pub failures: Vec<String>,
    pub repairs: Vec<String>,
    /// Whether the first valid action is an expected tool / the expected action (`None`:
    /// the line expects nothing).
    pub right: Option<bool>,
    pub exact: Option<bool>,
}

impl Sample {
    pub fn converted(&self) -> bool {
        !self.actions.is_empty()
    }

    /// The corpus line (`bellows eval` reads it back).
    pub fn to_json(&self, model: &str, config: &Config, line: &PromptLine) -> Value {
        let mut v = json!({
            "id": format!("{}#{}", self.prompt_id, self.sample),
            "prompt": self.prompt_id,
            "model": model,
            "format": sample_format(line, config).as_str(),
            "config": config.key(),
            "raw": self.raw,
            "stop": self.stop,
            "prompt_tokens": self.prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "seconds": self.seconds,
            "temperature": self.temperature,
            "seed": self.seed,
            "actions": self.actions,
            "echoes": self.echoes,
            "failures": self.failures,
            "repairs": self.repairs,
        });
        if let Value::Object(m) = &mut v {
            // The tools the reply was decoded against, so `bellows eval` decodes it the same
            // way: the line's own, or the builtins when they were offered as native tools.
            if let Some(t) = &line.tools {
                m.insert("tools".to_owned(), t.clone());
            } else if config.protocol != FormatId::Text {
                m.insert("tools".to_owned(), builtin_tools());
                m.insert("builtin_task".to_owned(), Value::Bool(true));
            }
            if !line.expect.is_empty() {
                m.insert("expect".to_owned(), Value::Array(line.expect.clone()));
                m.insert("right".to_owned(), json!(self.right));
                m.insert("exact".to_owned(), json!(self.exact));
            }
        }
        v
    }

    /// Reads back what [`Sample::to_json`] wrote (for resuming a sweep).
    pub fn from_json(v: &Value) -> Option<Sample> {
        let strings = |k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let id = v.get("id")?.as_str()?;
        let (_, sample) = id.rsplit_once('#')?;
        Some(Sample {
            prompt_id: v.get("prompt")?.as_str()?.to_owned(),
            sample: sample.parse().ok()?,
            raw: v.get("raw")?.as_str()?.to_owned(),
            stop: v.get("stop")?.as_str()?.to_owned(),
            prompt_tokens: v.get("prompt_tokens")?.as_u64()? as u32,
            generated_tokens: v.get("generated_tokens")?.as_u64()? as u32,
            seconds: v.get("seconds")?.as_f64()?,
            temperature: v.get("temperature")?.as_f64()? as f32,
            seed: v.get("seed")?.as_u64()? as u32,
            client: v.get("tools").is_some() && v.get("builtin_task").is_none(),
            actions: v.get("actions")?.as_array()?.clone(),
            echoes: v.get("echoes")?.as_u64()? as u32,
            failures: strings("failures"),
            repairs: strings("repairs"),
            right: v.get("right").and_then(Value::as_bool),
            exact: v.get("exact").and_then(Value::as_bool),
        })
    }
}

/// The format a reply to `line` is expected in: the text protocol for builtin tasks under it,
/// else the native format (Hermes when the profile speaks the text protocol, since that is
/// what the tools system message asks for).
fn sample_format(line: &PromptLine, config: &Config) -> FormatId {
    match config.protocol {
        FormatId::Text if line.tools.is_none() => FormatId::Text,
        FormatId::Text | FormatId::OpenAi => FormatId::Hermes,
        f => f,
    }
}

/// Why a prompt could not be measured at all (the line, not the model, is at fault).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("prompt {id}: {message}")]
pub struct PromptError {
    pub id: String,
    pub message: String,
}

/// The chat request a client would send for `line` under `config`.
/// `base_temperature` applies when neither the configuration nor the line sets one.
pub fn request_body(
    line: &PromptLine,
    config: &Config,
    opts: &GenOptions,
    seed: u32,
    base_temperature: f32,
) -> Value {
    let temperature = config
        .temperature
        .or(line.temperature)
        .unwrap_or(base_temperature);
    let mut body = json!({
        "messages": line.messages,
        "max_tokens": opts.max_tokens,
        "temperature": temperature,
        "seed": seed,
    });
    let Value::Object(m) = &mut body else {
        unreachable!("a JSON object literal")
    };
    let native = config.protocol != FormatId::Text;
    let tools = match &line.tools {
        Some(t) => Some(t.clone()),
        // Builtin tasks in a native protocol: the builtins are offered as native tools.
        None if native => Some(builtin_tools()),
        None => None,
    };
    if let Some(t) = tools {
        m.insert("tools".to_owned(), t);
        // Builtin tasks in a native protocol under the strict grammar: `required`, one
        // schema-valid call. A client's tools stay under `tool_choice: "auto"`, as a client
        // sends them (the profile's strict grammar does not force a client's model to call).
        if line.tools.is_none() && config.grammar == GrammarMode::Strict {
            m.insert("tool_choice".to_owned(), json!("required"));
        }
    }
    if line.tools.is_none() && !native {
        m.insert("bellows".to_owned(), json!({"protocol": "text"}));
    }
    if config.actions_per_turn == 1 {
        m.insert("parallel_tool_calls".to_owned(), json!(false));
    }
    body
}

/// Bellows' builtin tools as an OpenAI tools array.
pub fn builtin_tools() -> Value {
    Value::Array(
        Registry::builtin()
            .tool_schemas()
            .into_iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect(),
    )
}

/// A request ready for the engine, and how its reply is decoded and judged.
struct Prepared {
    generate: models::GenerateRequest,
    plan: tools::ToolPlan,
    expect: Vec<Action>,
    temperature: f32,
    seed: u32,
    /// Valid actions after which generation stops (`usize::MAX`: none).
    limit: usize,
}

/// Builds the request a client would send for `line` under `config` and runs it through the
/// gateway's validation, tool plan and template fitting.
fn prepare(
    engine: &Arc<dyn Engine>,
    base: &Defaults,
    line: &PromptLine,
    config: &Config,
    opts: &GenOptions,
    sample: u32,
) -> Result<Prepared, PromptError> {
    let err = |message: String| PromptError {
        id: line.id.clone(),
        message,
    };
    let seed = line.seed.unwrap_or(0).wrapping_add(sample);
    let body = request_body(line, config, opts, seed, base.sampling.temperature);
    let defaults = config.defaults(base);
    let validated = |body: &Value| {
        let bytes = serde_json::to_vec(body).map_err(|e| err(e.to_string()))?;
        let raw: ChatCompletionRequest = validate::parse(&bytes).map_err(|e| err(e.to_string()))?;
        validate::chat(raw, engine.info(), &defaults).map_err(|e| err(e.to_string()))
    };
    let mut valid = validated(&body)?;
    if line.has_system_message() && line.tools.is_none() {
        // The line teaches its protocol itself: its messages go to the model as written,
        // and only decoding follows the configuration.
        let mut plain = body.clone();
        if let Value::Object(m) = &mut plain {
            for k in ["tools", "tool_choice", "bellows"] {
                m.remove(k);
            }
        }
        valid.generate.prompt = validated(&plain)?.generate.prompt;
    } else if let Prompt::Chat { messages, tools } = &mut valid.generate.prompt {
        tools::fit_to_template(
            messages,
            tools,
            engine.renders_tools(),
            defaults.tools_presentation,
        );
    }
    let registry = valid
        .tools
        .registry()
        .cloned()
        .unwrap_or_else(|| Arc::new(Registry::client_only()));
    let expect: Vec<Action> = line
        .expect
        .iter()
        .map(|e| {
            registry
                .gold_action(e)
                .map_err(|x| err(format!("expect: {x}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(Prepared {
        temperature: valid.generate.sampling.temperature,
        generate: valid.generate,
        plan: valid.tools,
        expect,
        seed,
        limit: match config.actions_per_turn {
            0 => usize::MAX,
            n => n as usize,
        },
    })
}

/// What decoding a whole reply found.
struct Judged {
    actions: Vec<Value>,
    echoes: u32,
    failures: Vec<String>,
    repairs: Vec<String>,
    right: Option<bool>,
    exact: Option<bool>,
}

/// Decodes `raw` as the plan decodes a reply and judges it. With an action limit, what
/// follows the last counted action is what generation was halted in: it is not scored (a
/// block cut off by the halt is not the model's failure).
fn judge(p: &Prepared, id: &str, raw: &str) -> Judged {
    let mut events = Vec::new();
    if let Some(mut d) = p.plan.decoder() {
        events.extend(d.feed(raw));
        events.extend(d.finish());
    }
    let mut proposals = 0;
    if let Some(cut) = events.iter().position(|e| {
        if matches!(e, Event::Proposal { .. }) {
            proposals += 1;
        }
        proposals >= p.limit
    }) {
        events.truncate(cut + 1);
    }
    let score = ReplyScore::from_events(id, &events, None);
    let echoes = Echoes::default();
    let mut actions = Vec::new();
    // The agent bench counts a reply that acts with the same `Acting`.
    let mut acting = Acting::default();
    let mut first: Option<&Action> = None;
    for prop in &score.proposals {
        let verdict = echoes.verdict(&prop.action);
        acting.count(verdict);
        if verdict == Verdict::Acts {
            first.get_or_insert(&prop.action);
            actions.push(prop.action.to_json());
        }
    }
    let (right, exact) = if p.expect.is_empty() {
        (None, None)
    } else {
        let right = first.is_some_and(|a| p.expect.iter().any(|e| e.name() == a.name()));
        let exact = first.is_some_and(|a| p.expect.contains(a));
        (Some(right), Some(exact))
    };
    Judged {
        actions,
        echoes: acting.echoes,
        failures: score
            .failures
            .iter()
            .map(|f| f.as_str().to_owned())
            .collect(),
        repairs: score
            .repairs
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect(),
        right,
        exact,
    }
}

/// Generates, decodes and scores one reply to `line` under `config`.
pub async fn measure(
    engine: &Arc<dyn Engine>,
    base: &Defaults,
    line: &PromptLine,
    config: &Config,
    opts: &GenOptions,
    sample: u32,
) -> Result<Sample, PromptError> {
    let p = prepare(engine, base, line, config, opts, sample)?;
    let mut decoder = p.plan.decoder();
    let started = Instant::now();
    let mut generation = match engine.generate(p.generate.clone()).await {
        Ok(g) => g,
        Err(e) => {
            return Err(PromptError {
                id: line.id.clone(),
                message: format!("the engine refused the prompt: {e}"),
            });
        }
    };
    let prompt_tokens = generation.prompt_tokens;
    let mut raw = String::new();
    let mut generated = 0;
    let mut valid_count = 0;
    let stop = loop {
        match generation.next().await {
            Some(GenEvent::Text { piece, tokens, .. }) => {
                generated += tokens.len() as u32;
                raw.push_str(&piece);
                // Decoded as it streams only to know when to halt; the score decodes anew.
                if let Some(d) = decoder.as_mut() {
                    valid_count += d
                        .feed(&piece)
                        .iter()
                        .filter(|e| matches!(e, Event::Proposal { .. }))
                        .count();
                    if valid_count >= p.limit {
                        generation.halt();
                    }
                }
            }
            Some(GenEvent::Done { reason, timings }) => {
                generated = generated.max(timings.generated_tokens);
                break reason.as_str().to_owned();
            }
            Some(GenEvent::Failed { error, .. }) => break format!("failed: {error}"),
            None => break "failed: the stream ended without finishing".to_owned(),
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let j = judge(&p, &line.id, &raw);
    Ok(Sample {
        prompt_id: line.id.clone(),
        sample,
        raw,
        stop,
        prompt_tokens,
        generated_tokens: generated,
        seconds,
        temperature: p.temperature,
        seed: p.seed,
        client: line.tools.is_some(),
        actions: j.actions,
        echoes: j.echoes,
        failures: j.failures,
        repairs: j.repairs,
        right: j.right,
        exact: j.exact,
    })
}

/// Scores a stored reply again with today's codec and prompt set (its text, stop reason and
/// timings stay): a resumed sweep judges every reply by the same rules.
pub fn rescore(
    engine: &Arc<dyn Engine>,
    base: &Defaults,
    line: &PromptLine,
    config: &Config,
    opts: &GenOptions,
    stored: &Sample,
) -> Result<Sample, PromptError> {
    let p = prepare(engine, base, line, config, opts, stored.sample)?;
    let j = judge(&p, &line.id, &stored.raw);
    Ok(Sample {
        client: line.tools.is_some(),
        actions: j.actions,
        echoes: j.echoes,
        failures: j.failures,
        repairs: j.repairs,
        right: j.right,
        exact: j.exact,
        ..stored.clone()
    })
}

/// How many replies a prompt gets under `config`.
pub fn samples_for(line: &PromptLine, config: &Config, opts: &GenOptions) -> u32 {
    let t = config.temperature.or(line.temperature).unwrap_or_default();
    if t > 0.0 { opts.samples.max(1) } else { 1 }
}

/// Totals over a configuration's replies.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    pub replies: u32,
    pub converted: u32,
    pub valid_actions: u32,
    pub failed_actions: u32,
    pub echoes: u32,
    /// Replies to lines with `expect`.
    pub expected: u32,
    pub right: u32,
    pub exact: u32,
    /// Replies to client-tool lines, and those that got a valid call.
    pub client: u32,
    pub client_called: u32,
    pub generated_tokens: u64,
    pub prompt_tokens: u64,
    pub seconds: f64,
}

impl Figures {
    pub fn of(samples: &[Sample]) -> Figures {
        let mut f = Figures::default();
        for s in samples {
            f.replies += 1;
            f.converted += u32::from(s.converted());
            f.valid_actions += s.actions.len() as u32;
            f.failed_actions += s.failures.len() as u32;
            f.echoes += s.echoes;
            if let Some(r) = s.right {
                f.expected += 1;
                f.right += u32::from(r);
                f.exact += u32::from(s.exact == Some(true));
            }
            if s.client {
                f.client += 1;
                f.client_called += u32::from(s.converted());
            }
            f.generated_tokens += u64::from(s.generated_tokens);
            f.prompt_tokens += u64::from(s.prompt_tokens);
            f.seconds += s.seconds;
        }
        f
    }

    fn rate(n: u32, d: u32) -> f64 {
        if d == 0 {
            0.0
        } else {
            f64::from(n) / f64::from(d)
        }
    }

    pub fn conversion_rate(&self) -> f64 {
        Figures::rate(self.converted, self.replies)
    }

    pub fn valid_action_rate(&self) -> f64 {
        Figures::rate(self.valid_actions, self.valid_actions + self.failed_actions)
    }

    pub fn right_action_rate(&self) -> f64 {
        Figures::rate(self.right, self.expected)
    }

    pub fn exact_action_rate(&self) -> f64 {
        Figures::rate(self.exact, self.expected)
    }

    pub fn auto_tool_call_rate(&self) -> Option<f64> {
        (self.client > 0).then(|| Figures::rate(self.client_called, self.client))
    }

    /// Generated tokens per reply that acted: what one action costs (`None` when no reply
    /// acted). Counted per acting reply, not per action: the actions a small model strings on
    /// after its first are mostly invented, and dividing by them would reward the spew that
    /// one action per reply stops.
    pub fn tokens_per_action(&self) -> Option<f64> {
        (self.converted > 0).then(|| self.generated_tokens as f64 / f64::from(self.converted))
    }

    pub fn tokens_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.generated_tokens as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// True when `self` is better than `other` by the tuning objective: right-action rate
    /// first, then conversion, then fewer tokens per action, then speed. Two rates that
    /// differ by at most one reply in `replies` count as equal: one reply of forty is noise,
    /// and letting it decide would hide a large difference in the next key.
    pub fn better_than(&self, other: &Figures) -> bool {
        const EPS: f64 = 1e-9;
        let n = f64::from(self.replies.max(other.replies).max(1));
        let one_reply = 1.0 / n + EPS;
        let keys = |f: &Figures| {
            [
                (f.right_action_rate(), one_reply),
                (f.conversion_rate(), one_reply),
                (-f.tokens_per_action().unwrap_or(f64::INFINITY), EPS),
                (f.tokens_per_second(), EPS),
            ]
        };
        for ((a, tol), (b, _)) in keys(self).into_iter().zip(keys(other)) {
            if a > b + tol {
                return true;
            }
            if a + tol < b {
                return false;
            }
        }
        false
    }

    pub fn to_json(&self) -> Value {
        json!({
            "replies": self.replies,
            "conversion_rate": self.conversion_rate(),
            "valid_action_rate": self.valid_action_rate(),
            "right_action_rate": self.right_action_rate(),
            "exact_action_rate": self.exact_action_rate(),
            "auto_tool_call_rate": self.auto_tool_call_rate(),
            "echo_decodes": self.echoes,
            "failed_actions": self.failed_actions,
            "tokens_per_action": self.tokens_per_action(),
            "tokens_per_second": self.tokens_per_second(),
            "generated_tokens": self.generated_tokens,
            "prompt_tokens": self.prompt_tokens,
            "seconds": self.seconds,
        })
    }
}

/// A table row's cells for `f` (shared by `eval --generate` and `tune`).
pub fn figure_cells(f: &Figures) -> Vec<String> {
    let pct = |r: f64| format!("{:.0}%", r * 100.0);
    vec![
        f.replies.to_string(),
        pct(f.conversion_rate()),
        pct(f.valid_action_rate()),
        if f.expected > 0 {
            format!("{}/{}", f.right, f.expected)
        } else {
            "-".to_owned()
        },
        if f.expected > 0 {
            format!("{}/{}", f.exact, f.expected)
        } else {
            "-".to_owned()
        },
        f.auto_tool_call_rate().map_or_else(
            || "-".to_owned(),
            |_| format!("{}/{}", f.client_called, f.client),
        ),
        f.echoes.to_string(),
        f.tokens_per_action()
            .map_or_else(|| "-".to_owned(), |t| format!("{t:.0}")),
        format!("{:.1}", f.tokens_per_second()),
    ]
}

/// The column names of [`figure_cells`].
pub const FIGURE_COLUMNS: &[&str] = &[
    "replies", "conv", "valid", "right", "exact", "auto", "echo", "tok/act", "tok/s",
];

/// Renders rows as an aligned text table.
pub fn text_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i == 0 {
                let _ = write!(out, "{c:<w$}");
            } else {
                let _ = write!(out, "  {c:>w$}");
            }
        }
        out.push('\n');
    };
    line(header.to_vec(), &mut out);
    for r in rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// Per-prompt-kind breakdown of a set of samples: builtin tasks and client-tool tasks.
pub fn by_kind(samples: &[Sample]) -> BTreeMap<&'static str, Figures> {
    let mut out = BTreeMap::new();
    let (client, builtin): (Vec<Sample>, Vec<Sample>) =
        samples.iter().cloned().partition(|s| s.client);
    if !builtin.is_empty() {
        out.insert("builtin tools", Figures::of(&builtin));
    }
    if !client.is_empty() {
        out.insert("client tools", Figures::of(&client));
    }
    out
}
