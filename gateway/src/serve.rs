//! `bellows serve`: resolve the model, load it, and run the server until a signal.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use models::{Engine, LlamaEngine, LoadOptions};

use crate::config::ServeConfig;
use crate::defaults::Defaults;
use crate::metrics::Metrics;
use crate::server::{Server, shutdown_signal};
use crate::state::AppState;
use crate::upstream::Pool;

/// The models `scripts/fetch-models.sh` fetches, by the names it accepts: (name, file in the
/// models cache).
pub const KNOWN_MODELS: &[(&str, &str)] = &[
    ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ("gemma3", "gemma-3-270m-Q4_K_M.gguf"),
    ("tiny", "tiny-random-llama.gguf"),
    ("qwen-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ("qwen-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
];

/// The model served when none is named.
pub const DEFAULT_MODEL: &str = "smollm2";

/// The fetch script, relative to the repository root.
const FETCH_SCRIPT: &str = "scripts/fetch-models.sh";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "model {name:?} is not in the models cache ({path}); fetch it with \
         `scripts/fetch-models.sh {name}` or pass --model PATH"
    )]
    NotFetched { name: String, path: PathBuf },
    #[error(
        "fetching model {name:?} failed: `{command}` {why}; run it again once the cause is \
         fixed, or pass --model PATH"
    )]
    FetchFailed {
        name: String,
        command: String,
        why: String,
    },
    #[error("model file {path} does not exist, and it is not a known model name ({known})")]
    NoSuchFile { path: PathBuf, known: String },
    #[error(transparent)]
    Load(#[from] models::LoadError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Upstream(#[from] crate::upstream::PoolError),
    #[error(transparent)]
    Profile(#[from] models::ProfileError),
}

/// The models cache: `$BELLOWS_MODELS`, else `$XDG_CACHE_HOME/bellows/models`, else
/// `~/.cache/bellows/models` (the same rule as scripts/fetch-models.sh).
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BELLOWS_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("bellows").join("models")
}

/// What [`resolve_model_in`] does when a known model is missing from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetch {
    /// Run this copy of `scripts/fetch-models.sh NAME` (with `BELLOWS_MODELS` set to the
    /// cache), its progress on stderr.
    Script(PathBuf),
    /// Fail, naming the command that fetches it.
    Never,
}

impl Fetch {
    /// The script found by [`fetch_script`], unless `BELLOWS_NO_FETCH` is set (to anything
    /// but `0`) or no script is found.
    pub fn from_env() -> Fetch {
        let off = std::env::var_os("BELLOWS_NO_FETCH").is_some_and(|v| !v.is_empty() && v != "0");
        match fetch_script() {
            Some(script) if !off => Fetch::Script(script),
            _ => Fetch::Never,
        }
    }
}

/// `scripts/fetch-models.sh` of the checkout this binary runs from: looked for above the
/// executable (`target/release/bellows`, or a test binary under `target/release/deps`), then
/// in the source tree it was built from. `None` for a binary installed away from both.
pub fn fetch_script() -> Option<PathBuf> {
    let above_exe: Vec<PathBuf> = std::env::current_exe()
        .map(|exe| {
            exe.ancestors()
                .skip(1)
                .take(4)
                .map(|d| d.join(FETCH_SCRIPT))
                .collect()
        })
        .unwrap_or_default();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|root| root.join(FETCH_SCRIPT));
    above_exe.into_iter().chain(source).find(|p| p.is_file())
}

/// `--model PATH|NAME` to a file: a known name maps into the models cache, fetched there
/// first when missing (see [`Fetch::from_env`]); anything else is a path.
pub fn resolve_model(model: Option<&str>) -> Result<PathBuf, ServeError> {
    resolve_model_in(model, &models_dir(), &Fetch::from_env())
}

/// [`resolve_model`] with the cache and the fetch rule given.
pub fn resolve_model_in(
    model: Option<&str>,
    dir: &Path,
    fetch: &Fetch,
) -> Result<PathBuf, ServeError> {
    let model = model.unwrap_or(DEFAULT_MODEL);
    let Some((name, file)) = KNOWN_MODELS.iter().find(|(n, _)| *n == model) else {
        let path = PathBuf::from(model);
        if !path.is_file() {
            return Err(ServeError::NoSuchFile {
                path,
                known: known_names(),
            });
        }
        return Ok(path);
    };
    let path = dir.join(file);
    if path.is_file() {
        return Ok(path);
    }
    let Fetch::Script(script) = fetch else {
        return Err(ServeError::NotFetched {
            name: (*name).to_owned(),
            path,
        });
    };
    run_fetch(script, name, dir)?;
    if !path.is_file() {
        return Err(ServeError::FetchFailed {
            name: (*name).to_owned(),
            command: format!("{} {name}", script.display()),
            why: format!("succeeded but left no file at {}", path.display()),
        });
    }
    Ok(path)
}

/// The known model names, comma-separated.
pub fn known_names() -> String {
    KNOWN_MODELS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `script NAME` into `dir`. Its stdout (the path) is dropped so that a command whose
/// stdout is data (`--json`) stays clean; its progress lines go to stderr.
fn run_fetch(script: &Path, name: &str, dir: &Path) -> Result<(), ServeError> {
    let command = format!("{} {name}", script.display());
    eprintln!(
        "bellows: model {name} is not in {}; fetching it with `{command}`",
        dir.display()
    );
    let failed = |why: String| ServeError::FetchFailed {
        name: name.to_owned(),
        command: command.clone(),
        why,
    };
    let status = std::process::Command::new("bash")
        .arg(script)
        .arg(name)
        .env("BELLOWS_MODELS", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| failed(format!("could not start: {e}")))?;
    if !status.success() {
        return Err(failed(format!(
            "ended with {status} (its messages are above)"
        )));
    }
    Ok(())
}

/// Loads the model the config names, with the profile's defaults for requests.
pub fn load_engine(cfg: &ServeConfig) -> Result<(Arc<dyn Engine>, Defaults), ServeError> {
    let path = resolve_model(cfg.model.as_deref())?;
    let mut opts = LoadOptions::new(path);
    opts.gpu_layers = cfg.gpu_layers;
    opts.attention = cfg.attention;
    opts.threads = cfg.threads;
    opts.n_ctx = cfg.ctx;
    opts.n_ctx_seq = cfg.ctx_per_seq;
    opts.lookup = cfg.lookup;
    opts.slots = cfg.parallel;
    opts.queue_capacity = cfg.queue;
    opts.profile = cfg.profile.clone();
    opts.write_stall = cfg.write_stall;
    let engine = LlamaEngine::load(opts)?;
    let template = engine.chat_template().map(|t| t.source);
    let defaults = Defaults::of_profile(engine.profile()).with_template_format(template.as_deref());
    tracing::info!(
        format = defaults.protocol.as_str(),
        from = %defaults.protocol_from,
        "tool-call format"
    );
    Ok((Arc::new(engine), defaults))
}

/// The upstream pool the config names, its metrics registered into `metrics`, with its
/// health checks running.
pub async fn connect_upstreams(
    cfg: &ServeConfig,
    metrics: &Metrics,
) -> Result<Arc<Pool>, ServeError> {
    let names: Vec<String> = cfg.upstreams.iter().map(|u| u.url.clone()).collect();
    let pool = Arc::new(Pool::connect(cfg.upstreams.clone(), metrics.upstreams(&names)).await?);
    pool.spawn_health_checks(cfg.upstream_health);
    Ok(pool)
}

/// What requests through upstreams get by default. The upstream's model has no GGUF here to
/// pick a profile by: `--profile` names the one whose protocol, sampling and grammar mode
/// apply (default: generic). Upstreams are sent strict grammars only (llama-server's lazy
/// triggers are not forwarded), and a plan under a lazy grammar streams call arguments it
/// relies on the grammar to keep valid, so a lazy grammar mode is turned off: calls are then
/// validated whole.
pub fn upstream_defaults(profile: Option<&str>) -> Result<Defaults, ServeError> {
    let mut defaults = match profile {
        Some(p) => Defaults::of_profile(&models::Profile::named(p)?),
        None => Defaults::default(),
    };
    if defaults.grammar == models::GrammarMode::Lazy {
        tracing::warn!("the profile's lazy grammar mode does not apply to upstreams; off");
        defaults.grammar = models::GrammarMode::Off;
    }
    Ok(defaults)
}

/// Runs `bellows serve` to completion (until SIGINT/SIGTERM and the drain).
pub async fn run(cfg: ServeConfig) -> Result<(), ServeError> {
    let metrics = Metrics::new();
    let (engine, defaults, pool): (Arc<dyn Engine>, Defaults, Option<Arc<Pool>>) =
        if cfg.upstreams.is_empty() {
            let (engine, defaults) = load_engine(&cfg)?;
            (engine, defaults, None)
        } else {
            let defaults = upstream_defaults(cfg.profile.as_deref())?;
            let pool = connect_upstreams(&cfg, &metrics).await?;
            (pool.clone(), defaults, Some(pool))
        };
    let info = engine.info().clone();
    let mut state = AppState::new(engine).with_metrics(metrics);
    if let Some(pool) = pool {
        state = state.with_upstream(pool);
    }
    let state = state
        .with_api_key(cfg.api_key.clone())
        .with_max_body_bytes(cfg.max_body_bytes)
        .with_defaults(defaults)
        .with_aliases(cfg.aliases.clone())
        .with_write_stall(cfg.write_stall);
    let addr = format!("{}:{}", cfg.host, cfg.port);
    let server = Server::bind((cfg.host.as_str(), cfg.port), state)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local = server.local_addr()?;
    tracing::info!(
        model = %info.id,
        profile = %info.profile,
        n_ctx_per_seq = info.n_ctx,
        n_ctx_total = info.n_ctx_total,
        slots = info.slots,
        aliases = ?cfg.aliases,
        upstreams = ?cfg.upstreams.iter().map(|u| u.url.as_str()).collect::<Vec<_>>(),
        auth = cfg.api_key.is_some(),
        "listening on http://{local}/v1"
    );
    server.run(shutdown_signal()).await?;
    Ok(())
}
