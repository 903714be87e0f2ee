//! `bellows serve` settings: command-line flags, `BELLOWS_*` environment variables and an
//! optional TOML config file, merged in that order of precedence.
//!
//! clap reads flags and environment variables together (a flag wins over its variable); every
//! field is optional there so that a value absent from both can still come from the file, and
//! only then from the built-in default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::upstream::{DEFAULT_UPSTREAM_PARALLEL, Target, Timeouts, UpstreamConfig};

/// `--lookup`'s values.
pub fn parse_lookup(s: &str) -> Result<models::Lookup, String> {
    match s {
        "off" => Ok(models::Lookup::Off),
        "auto" => Ok(models::Lookup::Auto),
        "on" => Ok(models::Lookup::On),
        other => Err(format!("'{other}' is not one of off, auto, on")),
    }
}

/// A setting parsed with `FromStr` from a config file's string.
fn parsed_from_file<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr<Err = String>,
{
    let s: Option<String> = Option::deserialize(d)?;
    s.map(|s| s.parse().map_err(serde::de::Error::custom))
        .transpose()
}

fn lookup_from_file<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<models::Lookup>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    s.map(|s| parse_lookup(&s).map_err(serde::de::Error::custom))
        .transpose()
}

/// Default port: the one llama-server and most local OpenAI servers use.
pub const DEFAULT_PORT: u16 = 8080;
pub const DEFAULT_HOST: &str = "127.0.0.1";
/// Request bodies larger than this are refused with 413.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How long a stream waits for a client that stopped reading before cancelling it.
pub const DEFAULT_WRITE_STALL: std::time::Duration = std::time::Duration::from_secs(30);

/// Serve an OpenAI-compatible endpoint on a local GGUF model.
///
/// Every setting can also come from a `BELLOWS_*` environment variable or from the TOML file
/// given with `--config` (keys are the long flag names with `_` for `-`, e.g.
/// `gpu_layers = 99`). A flag beats its environment variable, which beats the file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// GGUF file to serve, or the name of a model fetched by scripts/fetch-models.sh
    /// (`smollm2`, `gemma3`, `tiny`, `qwen-coder-0.5b`, `qwen-coder-1.5b`; a named model
    /// missing from the cache is fetched first, unless BELLOWS_NO_FETCH=1). Default: the
    /// SmolLM2-135M file in the models cache ($BELLOWS_MODELS, else
    /// $XDG_CACHE_HOME/bellows/models, else ~/.cache/bellows/models).
    #[arg(long, short = 'm', env = "BELLOWS_MODEL", value_name = "PATH|NAME")]
    pub model: Option<String>,

    /// Address to listen on. Default: 127.0.0.1 (this machine only). Use 0.0.0.0 to accept
    /// connections from other machines, ideally together with --api-key.
    #[arg(long, env = "BELLOWS_HOST")]
    pub host: Option<String>,

    /// Port to listen on. Default: 8080. Use 0 to pick a free port (it is logged).
    #[arg(long, short = 'p', env = "BELLOWS_PORT")]
    pub port: Option<u16>,

    /// Require `Authorization: Bearer KEY` on every endpoint except /health.
    #[arg(long, env = "BELLOWS_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Number of requests generated at the same time (slots). They run as sequences of one
    /// llama.cpp context, decoded together in one batch per step, and each keeps its own
    /// prompt cache; requests that share a prompt prefix (n choices, an agent's system
    /// prompt) evaluate it once. Default: 1.
    #[arg(long, env = "BELLOWS_PARALLEL")]
    pub parallel: Option<u32>,

    /// Context size of all slots together, in tokens (the KV cells they share), as
    /// llama-server's `-c`. Default: --ctx-per-seq times --parallel.
    #[arg(long, env = "BELLOWS_CTX")]
    pub ctx: Option<u32>,

    /// The most one request may use: its prompt plus its reply, in tokens. A request that
    /// cannot fit is refused with a 400; one that fits but would overfill --ctx while others
    /// run waits in the queue. Default: --ctx divided among the slots when --ctx is given,
    /// else the profile's context, else 4096, capped at the model's training context.
    #[arg(long, env = "BELLOWS_CTX_PER_SEQ")]
    pub ctx_per_seq: Option<u32>,

    /// CPU threads for generation and prompt evaluation (all slots share them). Default: the
    /// available cores.
    #[arg(long, env = "BELLOWS_THREADS")]
    pub threads: Option<u32>,

    /// Layers to offload to the GPU (needs a build with the `cuda`, `vulkan` or `metal`
    /// feature). Default: 0, all on the CPU.
    #[arg(long, env = "BELLOWS_GPU_LAYERS")]
    pub gpu_layers: Option<u32>,

    /// Flash attention, as llama-server's `--flash-attn`: `auto` lets llama.cpp decide per
    /// model and device, `on` requires it, `off` never uses it. A quantized --cache-type-v
    /// needs it. Default: auto.
    #[arg(long, env = "BELLOWS_FLASH_ATTN", value_name = "on|off|auto")]
    pub flash_attn: Option<models::FlashAttn>,

    /// Element type of the KV cache's keys, as llama-server's `--cache-type-k`: f32, f16,
    /// bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 (a quantized cache holds more tokens in the
    /// same memory: q8_0 about half of f16's). Default: f16.
    #[arg(long, env = "BELLOWS_CACHE_TYPE_K", value_name = "TYPE")]
    pub cache_type_k: Option<models::CacheType>,

    /// Element type of the KV cache's values, as llama-server's `--cache-type-v` (the same
    /// types; a quantized one needs flash attention on or auto). Default: f16.
    #[arg(long, env = "BELLOWS_CACHE_TYPE_V", value_name = "TYPE")]
    pub cache_type_v: Option<models::CacheType>,

    /// Model profile: a name from models/profiles (without `.toml`) or a path to a profile
    /// file. It picks the tool-call protocol, chat template, stop strings, sampling and
    /// grammar mode. Default: the profile whose match rule fits the GGUF, else generic (with
    /// --upstream: generic, and only the protocol, sampling and grammar mode apply).
    #[arg(long, env = "BELLOWS_PROFILE")]
    pub profile: Option<String>,

    /// Lookup decoding: a generating request drafts its next tokens from repeats in its own
    /// prompt and reply (an edit copies lines from the file it was shown), and one step checks
    /// them all; the reply is the same token for token, except where two tokens tie within
    /// llama.cpp's rounding (a batch of several tokens rounds differently from one: measured,
    /// 1 reply in 23 differs at a 0.008-nat tie). `auto` drafts while a single request
    /// generates (with two or more the batch is wide already and drafts cost more than they
    /// save, measured), at the length worth it: it weighs how often the reply's drafts are
    /// taken (checked without drafting while drafts do not pay) against what the extra
    /// tokens cost a step on this machine, timed as it runs (on a two-core CPU a step of three
    /// tokens costs two of one). `on` drafts at every step while drafted tokens are taken at
    /// all, `off` never. Default: auto.
    #[arg(long, env = "BELLOWS_LOOKUP", value_name = "off|auto|on", value_parser = parse_lookup)]
    pub lookup: Option<models::Lookup>,

    /// Generations that may wait for a free slot before the server answers 503 (a request
    /// with `n` choices runs `n`). Default: 64.
    #[arg(long, env = "BELLOWS_QUEUE")]
    pub queue: Option<usize>,

    /// Largest accepted request body, in bytes; larger ones get 413. Default: 4194304.
    #[arg(long, env = "BELLOWS_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,

    /// Another name for the model in `GET /v1/models` (repeatable). Requests may name the
    /// model anything (clients send `gpt-4o`, `default`, …): one model is loaded and it
    /// answers to every name; aliases only make names visible to clients that list models.
    #[arg(
        long = "alias",
        env = "BELLOWS_ALIAS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub alias: Vec<String>,

    /// Seconds a streaming response may wait on a client that stopped reading before the
    /// request is cancelled and its slot freed. Default: 30.
    #[arg(long, env = "BELLOWS_WRITE_STALL_SECS", value_name = "SECONDS")]
    pub write_stall_secs: Option<f64>,

    /// Serve through an OpenAI-compatible server instead of a local model (repeatable, or
    /// comma-separated): `http://HOST:PORT` of llama-server, vLLM, Ollama or another bellows.
    /// Requests go to the least busy healthy one; a failure before the first token moves the
    /// request to the next. Replies are decoded, repaired and counted as a local model's are.
    #[arg(
        long = "upstream",
        env = "BELLOWS_UPSTREAM",
        value_name = "URL",
        value_delimiter = ','
    )]
    pub upstream: Vec<String>,

    /// API key sent to the upstreams as `Authorization: Bearer KEY`: once for all, or once per
    /// --upstream, in the same order.
    #[arg(
        long = "upstream-key",
        env = "BELLOWS_UPSTREAM_KEY",
        value_name = "KEY",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub upstream_key: Vec<String>,

    /// The model to request from the upstreams: once for all, or once per --upstream.
    /// Default: the first model each upstream lists.
    #[arg(
        long = "upstream-model",
        env = "BELLOWS_UPSTREAM_MODEL",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub upstream_model: Vec<String>,

    /// Requests sent to one upstream at once; more wait for another upstream or get 503.
    /// Default: 4.
    #[arg(long, env = "BELLOWS_UPSTREAM_PARALLEL", value_name = "N")]
    pub upstream_parallel: Option<u32>,

    /// Seconds to open a connection to an upstream. Default: 5.
    #[arg(
        long,
        env = "BELLOWS_UPSTREAM_CONNECT_TIMEOUT_SECS",
        value_name = "SECONDS"
    )]
    pub upstream_connect_timeout_secs: Option<f64>,

    /// Seconds from sending a request to an upstream to its first generated text (prompt
    /// evaluation included). Default: 120.
    #[arg(
        long,
        env = "BELLOWS_UPSTREAM_FIRST_TOKEN_TIMEOUT_SECS",
        value_name = "SECONDS"
    )]
    pub upstream_first_token_timeout_secs: Option<f64>,

    /// Seconds an upstream stream may stay silent before the request fails. Default: 60.
    #[arg(
        long,
        env = "BELLOWS_UPSTREAM_IDLE_TIMEOUT_SECS",
        value_name = "SECONDS"
    )]
    pub upstream_idle_timeout_secs: Option<f64>,

    /// Seconds between health checks of the upstreams. Default: 10.
    #[arg(long, env = "BELLOWS_UPSTREAM_HEALTH_SECS", value_name = "SECONDS")]
    pub upstream_health_secs: Option<f64>,

    /// TOML file with any of the settings above.
    #[arg(long, env = "BELLOWS_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The TOML config file: the same settings, all optional. Unknown keys are an error so that a
/// typo does not silently fall back to a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub model: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub api_key: Option<String>,
    pub parallel: Option<u32>,
    pub ctx: Option<u32>,
    pub ctx_per_seq: Option<u32>,
    pub threads: Option<u32>,
    pub gpu_layers: Option<u32>,
    #[serde(default, deserialize_with = "parsed_from_file")]
    pub flash_attn: Option<models::FlashAttn>,
    #[serde(default, deserialize_with = "parsed_from_file")]
    pub cache_type_k: Option<models::CacheType>,
    #[serde(default, deserialize_with = "parsed_from_file")]
    pub cache_type_v: Option<models::CacheType>,
    pub profile: Option<String>,
    #[serde(default, deserialize_with = "lookup_from_file")]
    pub lookup: Option<models::Lookup>,
    pub queue: Option<usize>,
    pub max_body_bytes: Option<usize>,
    #[serde(default)]
    pub alias: Vec<String>,
    pub write_stall_secs: Option<f64>,
    #[serde(default)]
    pub upstream: Vec<String>,
    #[serde(default)]
    pub upstream_key: Vec<String>,
    #[serde(default)]
    pub upstream_model: Vec<String>,
    pub upstream_parallel: Option<u32>,
    pub upstream_connect_timeout_secs: Option<f64>,
    pub upstream_first_token_timeout_secs: Option<f64>,
    pub upstream_idle_timeout_secs: Option<f64>,
    pub upstream_health_secs: Option<f64>,
}

/// Settings after merging; `None` means "let the engine decide" (profile or model default).
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    pub model: Option<String>,
    pub host: String,
    pub port: u16,
    pub api_key: Option<String>,
    pub parallel: u32,
    pub ctx: Option<u32>,
    pub ctx_per_seq: Option<u32>,
    pub threads: Option<u32>,
    pub gpu_layers: u32,
    /// Flash attention and the KV cache's element types.
    pub attention: models::Attention,
    pub profile: Option<String>,
    pub lookup: models::Lookup,
    pub queue: usize,
    pub max_body_bytes: usize,
    pub aliases: Vec<String>,
    pub write_stall: std::time::Duration,
    /// `--upstream`: serve through these instead of a local model.
    pub upstreams: Vec<UpstreamConfig>,
    /// Time between upstream health checks.
    pub upstream_health: std::time::Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("invalid setting `{name}`: {message}")]
    Invalid { name: &'static str, message: String },
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })
    }
}

impl ServeArgs {
    /// Merges flags/env over the config file (if any) over the defaults, and checks ranges.
    pub fn resolve(&self) -> Result<ServeConfig, ConfigError> {
        let file = match &self.config {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        let attention = models::Attention {
            flash_attn: self.flash_attn.or(file.flash_attn).unwrap_or_default(),
            cache_type_k: self.cache_type_k.or(file.cache_type_k).unwrap_or_default(),
            cache_type_v: self.cache_type_v.or(file.cache_type_v).unwrap_or_default(),
        };
        models::attention::check(&attention).map_err(|message| ConfigError::Invalid {
            name: "cache_type_v",
            message,
        })?;
        let cfg = ServeConfig {
            model: self.model.clone().or(file.model),
            host: self
                .host
                .clone()
                .or(file.host)
                .unwrap_or_else(|| DEFAULT_HOST.to_owned()),
            port: self.port.or(file.port).unwrap_or(DEFAULT_PORT),
            api_key: self
                .api_key
                .clone()
                .or(file.api_key)
                .filter(|k| !k.is_empty()),
            parallel: self.parallel.or(file.parallel).unwrap_or(1),
            ctx: self.ctx.or(file.ctx),
            ctx_per_seq: self.ctx_per_seq.or(file.ctx_per_seq),
            threads: self.threads.or(file.threads),
            gpu_layers: self.gpu_layers.or(file.gpu_layers).unwrap_or(0),
            attention,
            profile: self.profile.clone().or(file.profile),
            lookup: self.lookup.or(file.lookup).unwrap_or_default(),
            queue: self.queue.or(file.queue).unwrap_or(64),
            max_body_bytes: self
                .max_body_bytes
                .or(file.max_body_bytes)
                .unwrap_or(DEFAULT_MAX_BODY_BYTES),
            aliases: if self.alias.is_empty() {
                file.alias
            } else {
                self.alias.clone()
            },
            write_stall: seconds(
                "write_stall_secs",
                self.write_stall_secs.or(file.write_stall_secs),
                DEFAULT_WRITE_STALL,
            )?,
            upstreams: Vec::new(),
            upstream_health: seconds(
                "upstream_health_secs",
                self.upstream_health_secs.or(file.upstream_health_secs),
                DEFAULT_UPSTREAM_HEALTH,
            )?,
        };
        let pick = |flag: &[String], from_file: Vec<String>| {
            if flag.is_empty() {
                from_file
            } else {
                flag.to_vec()
            }
        };
        let urls = pick(&self.upstream, file.upstream);
        let keys = pick(&self.upstream_key, file.upstream_key);
        let upstream_models = pick(&self.upstream_model, file.upstream_model);
        let defaults = Timeouts::default();
        let timeouts = Timeouts {
            connect: seconds(
                "upstream_connect_timeout_secs",
                self.upstream_connect_timeout_secs
                    .or(file.upstream_connect_timeout_secs),
                defaults.connect,
            )?,
            first_byte: seconds(
                "upstream_first_token_timeout_secs",
                self.upstream_first_token_timeout_secs
                    .or(file.upstream_first_token_timeout_secs),
                defaults.first_byte,
            )?,
            idle: seconds(
                "upstream_idle_timeout_secs",
                self.upstream_idle_timeout_secs
                    .or(file.upstream_idle_timeout_secs),
                defaults.idle,
            )?,
        };
        let parallel = self
            .upstream_parallel
            .or(file.upstream_parallel)
            .unwrap_or(DEFAULT_UPSTREAM_PARALLEL);
        let mut cfg = cfg;
        cfg.upstreams = upstream_configs(&urls, &keys, &upstream_models, parallel, timeouts)?;
        let invalid = |name, message: &str| ConfigError::Invalid {
            name,
            message: message.into(),
        };
        if cfg.parallel == 0 {
            return Err(invalid("parallel", "must be at least 1"));
        }
        if cfg.ctx == Some(0) {
            return Err(invalid("ctx", "must be at least 1"));
        }
        if cfg.ctx_per_seq == Some(0) {
            return Err(invalid("ctx_per_seq", "must be at least 1"));
        }
        if cfg.threads == Some(0) {
            return Err(invalid("threads", "must be at least 1"));
        }
        if cfg.max_body_bytes < 1024 {
            return Err(invalid("max_body_bytes", "must be at least 1024"));
        }
        if cfg.aliases.iter().any(|a| a.trim().is_empty()) {
            return Err(invalid("alias", "must not be empty"));
        }
        if cfg.host.is_empty() {
            return Err(invalid("host", "must not be empty"));
        }
        if !cfg.upstreams.is_empty() && cfg.model.is_some() {
            return Err(invalid(
                "upstream",
                "serves through upstreams instead of a local model: give --upstream or --model, \
                 not both",
            ));
        }
        Ok(cfg)
    }
}

/// Time between upstream health checks, unless configured.
pub const DEFAULT_UPSTREAM_HEALTH: std::time::Duration = std::time::Duration::from_secs(10);

/// A number of seconds in (0, 86400], or `default` when absent.
fn seconds(
    name: &'static str,
    value: Option<f64>,
    default: std::time::Duration,
) -> Result<std::time::Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(s))
        }
        Some(s) => Err(ConfigError::Invalid {
            name,
            message: format!("{s} is not a number of seconds in (0, 86400]"),
        }),
    }
}

/// The upstreams with their keys and models: each of those given once for all, or once per
/// upstream.
pub fn upstream_configs(
    urls: &[String],
    keys: &[String],
    models: &[String],
    parallel: u32,
    timeouts: Timeouts,
) -> Result<Vec<UpstreamConfig>, ConfigError> {
    let per = |name: &'static str, values: &[String]| match values.len() {
        0 => Ok(vec![None; urls.len()]),
        1 => Ok(vec![Some(values[0].clone()); urls.len()]),
        n if n == urls.len() => Ok(values.iter().cloned().map(Some).collect()),
        n => Err(ConfigError::Invalid {
            name,
            message: format!(
                "given {n} times for {} upstreams: give it once for all, or once per upstream",
                urls.len()
            ),
        }),
    };
    if urls.is_empty() && (!keys.is_empty() || !models.is_empty()) {
        return Err(ConfigError::Invalid {
            name: "upstream",
            message: "--upstream-key and --upstream-model need --upstream".into(),
        });
    }
    if parallel == 0 {
        return Err(ConfigError::Invalid {
            name: "upstream_parallel",
            message: "must be at least 1".into(),
        });
    }
    let keys = per("upstream_key", keys)?;
    let models = per("upstream_model", models)?;
    let mut out = Vec::with_capacity(urls.len());
    for ((url, key), model) in urls.iter().zip(keys).zip(models) {
        Target::parse(url).map_err(|e| ConfigError::Invalid {
            name: "upstream",
            message: e.to_string(),
        })?;
        out.push(UpstreamConfig {
            url: url.clone(),
            key: key.filter(|k| !k.is_empty()),
            model,
            parallel,
            timeouts,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_config(text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bellows-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir is writable");
        let path = dir.join(format!("c{}.toml", text.len()));
        std::fs::write(&path, text).expect("temp file is writable");
        path
    }

    #[test]
    fn defaults_apply_when_nothing_is_given() {
        let cfg = ServeArgs::default().resolve().expect("defaults are valid");
        assert_eq!(cfg.host, "127.0.0.1");
        assert_eq!(cfg.port, 8080);
        assert_eq!(cfg.parallel, 1);
        assert_eq!(cfg.api_key, None);
    }

    #[test]
    fn flags_beat_the_file_and_the_file_beats_defaults() {
        let path = write_config("port = 9000\nparallel = 3\napi_key = \"k\"\n");
        let args = ServeArgs {
            port: Some(9100),
            config: Some(path),
            ..ServeArgs::default()
        };
        let cfg = args.resolve().expect("valid");
        assert_eq!(cfg.port, 9100);
        assert_eq!(cfg.parallel, 3);
        assert_eq!(cfg.api_key.as_deref(), Some("k"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        let path = write_config("prot = 9000\n");
        let args = ServeArgs {
            config: Some(path),
            ..ServeArgs::default()
        };
        assert!(matches!(args.resolve(), Err(ConfigError::Parse { .. })));
        let args = ServeArgs {
            parallel: Some(0),
            ..ServeArgs::default()
        };
        assert!(matches!(
            args.resolve(),
            Err(ConfigError::Invalid {
                name: "parallel",
                ..
            })
        ));
    }

    #[test]
    fn attention_settings_come_from_flags_or_the_file_under_llama_server_names() {
        use models::{CacheType, FlashAttn};
        assert!(
            ServeArgs::default()
                .resolve()
                .expect("valid")
                .attention
                .is_default()
        );
        let path =
            write_config("flash_attn = \"on\"\ncache_type_k = \"q8_0\"\ncache_type_v = \"q4_0\"\n");
        let args = ServeArgs {
            cache_type_k: Some(CacheType::Q5_1),
            config: Some(path),
            ..ServeArgs::default()
        };
        let a = args.resolve().expect("valid").attention;
        assert_eq!(a.flash_attn, FlashAttn::On);
        assert_eq!(a.cache_type_k, CacheType::Q5_1, "the flag beats the file");
        assert_eq!(a.cache_type_v, CacheType::Q4_0);

        // A type llama-server does not name: the file's parse error says which ones it does.
        let path = write_config("cache_type_k = \"q3_k\"\n");
        let err = ServeArgs {
            config: Some(path),
            ..ServeArgs::default()
        }
        .resolve()
        .expect_err("q3_k is not a cache type");
        assert!(matches!(err, ConfigError::Parse { .. }), "{err:?}");
        assert!(err.to_string().contains("q8_0"), "{err}");

        // A quantized V cache without flash attention, refused before any model loads.
        let err = ServeArgs {
            flash_attn: Some(FlashAttn::Off),
            cache_type_v: Some(CacheType::Q8_0),
            ..ServeArgs::default()
        }
        .resolve()
        .expect_err("llama.cpp refuses it");
        assert!(
            matches!(
                err,
                ConfigError::Invalid {
                    name: "cache_type_v",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn upstream_keys_and_models_apply_to_all_or_pair_up() {
        let urls = |n: usize| {
            (0..n)
                .map(|i| format!("http://h{i}:80"))
                .collect::<Vec<_>>()
        };
        let args = ServeArgs {
            upstream: urls(2),
            upstream_key: vec!["k".into()],
            upstream_model: vec!["a".into(), "b".into()],
            upstream_idle_timeout_secs: Some(2.5),
            ..ServeArgs::default()
        };
        let cfg = args.resolve().expect("valid");
        let got: Vec<_> = cfg
            .upstreams
            .iter()
            .map(|u| (u.key.as_deref(), u.model.as_deref()))
            .collect();
        assert_eq!(got, vec![(Some("k"), Some("a")), (Some("k"), Some("b"))]);
        assert_eq!(
            cfg.upstreams[0].timeouts.idle,
            std::time::Duration::from_millis(2500)
        );
        let three_models = ServeArgs {
            upstream: urls(2),
            upstream_model: vec!["a".into(), "b".into(), "c".into()],
            ..ServeArgs::default()
        };
        assert!(matches!(
            three_models.resolve(),
            Err(ConfigError::Invalid {
                name: "upstream_model",
                ..
            })
        ));
        let https = ServeArgs {
            upstream: vec!["https://api.example.com".into()],
            ..ServeArgs::default()
        };
        assert!(matches!(
            https.resolve(),
            Err(ConfigError::Invalid {
                name: "upstream",
                ..
            })
        ));
        let both = ServeArgs {
            upstream: urls(1),
            model: Some("tiny".into()),
            ..ServeArgs::default()
        };
        assert!(both.resolve().is_err());
    }
}
