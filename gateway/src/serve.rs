//! `bellows serve`: resolve the model, load it, and run the server until a signal.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use models::{Engine, LlamaEngine, LoadOptions};

use crate::config::ServeConfig;
use crate::server::{Server, shutdown_signal};
use crate::state::{AppState, Defaults};

/// The models `scripts/fetch-models.sh` fetches, by the names it accepts.
pub const KNOWN_MODELS: &[(&str, &str)] = &[
    ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ("gemma3", "gemma-3-270m-Q4_K_M.gguf"),
    ("tiny", "tiny-random-llama.gguf"),
];

/// The model served when none is named.
pub const DEFAULT_MODEL: &str = "smollm2";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "model {name:?} is not in the models cache ({path}); fetch it with \
         `scripts/fetch-models.sh {name}` or pass --model PATH"
    )]
    NotFetched { name: String, path: PathBuf },
    #[error("model file {0} does not exist")]
    NoSuchFile(PathBuf),
    #[error(transparent)]
    Load(#[from] models::LoadError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Io(#[from] std::io::Error),
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

/// `--model PATH|NAME` to a file: a known name maps into the models cache; anything else is
/// a path.
pub fn resolve_model(model: Option<&str>) -> Result<PathBuf, ServeError> {
    let model = model.unwrap_or(DEFAULT_MODEL);
    if let Some((name, file)) = KNOWN_MODELS.iter().find(|(n, _)| *n == model) {
        let path = models_dir().join(file);
        if !path.is_file() {
            return Err(ServeError::NotFetched {
                name: (*name).to_owned(),
                path,
            });
        }
        return Ok(path);
    }
    let path = PathBuf::from(model);
    if !path.is_file() {
        return Err(ServeError::NoSuchFile(path));
    }
    Ok(path)
}

/// Loads the model the config names, with the profile's defaults for requests.
pub fn load_engine(cfg: &ServeConfig) -> Result<(Arc<dyn Engine>, Defaults), ServeError> {
    let path = resolve_model(cfg.model.as_deref())?;
    let mut opts = LoadOptions::new(path);
    opts.gpu_layers = cfg.gpu_layers;
    opts.threads = cfg.threads;
    opts.n_ctx = cfg.ctx;
    opts.slots = cfg.parallel;
    opts.queue_capacity = cfg.queue;
    opts.profile = cfg.profile.clone();
    opts.write_stall = cfg.write_stall;
    let engine = LlamaEngine::load(opts)?;
    let profile = engine.profile();
    let defaults = Defaults::of_profile(profile);
    Ok((Arc::new(engine), defaults))
}

/// Runs `bellows serve` to completion (until SIGINT/SIGTERM and the drain).
pub async fn run(cfg: ServeConfig) -> Result<(), ServeError> {
    let (engine, defaults) = load_engine(&cfg)?;
    let info = engine.info().clone();
    let state = AppState::new(engine)
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
        n_ctx = info.n_ctx,
        slots = info.slots,
        aliases = ?cfg.aliases,
        auth = cfg.api_key.is_some(),
        "listening on http://{local}/v1"
    );
    server.run(shutdown_signal()).await?;
    Ok(())
}
