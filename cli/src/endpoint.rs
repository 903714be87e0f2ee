//! `--endpoint URL`: the agent on a remote OpenAI-compatible server (llama-server, vLLM,
//! Ollama, another bellows) instead of an in-process model. The loop sees only the `Engine`
//! trait; this is the gateway's upstream `Pool` with one upstream.

use std::sync::Arc;

use models::{Engine, Profile};

use crate::model::ModelArgs;

/// Where the model runs when it is not loaded here.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EndpointArgs {
    /// Run on this OpenAI-compatible server instead of loading a model:
    /// `http://HOST:PORT[/v1]`. Prompts are rendered here with the server's chat template when
    /// it publishes one (llama-server, bellows), else sent as chat messages. --model is then
    /// not loaded; --profile still picks the sampling, grammar and protocol (default:
    /// generic).
    #[arg(long, env = "BELLOWS_ENDPOINT", value_name = "URL")]
    pub endpoint: Option<String>,
    /// API key for --endpoint, sent as `Authorization: Bearer KEY`.
    #[arg(
        long,
        env = "BELLOWS_ENDPOINT_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub endpoint_key: Option<String>,
    /// The model to request from --endpoint; default: the first it lists.
    #[arg(long, env = "BELLOWS_ENDPOINT_MODEL", value_name = "NAME")]
    pub endpoint_model: Option<String>,
}

/// The engine the flags name and the profile its requests use: the `--endpoint` server with
/// `--profile` (else generic), or the model `--model` names (else `default`) with its own;
/// `slots` requests at once (attempts side by side).
pub fn engine(
    endpoint: &EndpointArgs,
    model: &ModelArgs,
    default: &str,
    slots: u32,
) -> anyhow::Result<(Arc<dyn Engine>, Profile)> {
    let Some(url) = &endpoint.endpoint else {
        let engine = model.load_with(Some(default), slots)?;
        let profile = engine.profile().clone();
        return Ok((Arc::new(engine), profile));
    };
    if model.model.is_some() {
        anyhow::bail!("--endpoint runs on a remote server: give --endpoint or --model, not both");
    }
    let profile = match &model.profile {
        Some(p) => Profile::named(p)?,
        None => Profile::generic(),
    };
    let config = gateway::upstream::UpstreamConfig {
        key: endpoint.endpoint_key.clone().filter(|k| !k.is_empty()),
        model: endpoint.endpoint_model.clone(),
        // The loop sends one request at a time; side-by-side attempts one each.
        parallel: slots.max(1),
        ..gateway::upstream::UpstreamConfig::new(url.clone())
    };
    let metrics = gateway::metrics::Metrics::new();
    let upstreams = metrics.upstreams(std::slice::from_ref(url));
    // Discovery only: the generations later run on the caller's runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pool = runtime.block_on(gateway::upstream::Pool::connect(vec![config], upstreams))?;
    Ok((Arc::new(pool), profile))
}
