//! The endpoints that do not generate: `/health`, `/v1/models`, `/metrics`, `/tokenize`.

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::api::request::TokenizeRequest;
use crate::api::response::{Health, ModelCard, ModelCardExt, ModelList, TokenizeResponse};
use crate::api::upstream::{Props, PropsGeneration};
use crate::body::{self, Body};
use crate::error::ApiError;
use crate::state::AppState;
use crate::validate;

pub fn health(state: &AppState) -> Response<Body> {
    body::json(
        StatusCode::OK,
        &Health {
            status: "ok",
            model: state.engine.info().id.clone(),
        },
    )
}

/// The card for the loaded model under `name` (its id, an alias, or any name a client asks
/// for: one model is loaded, and every name is served by it).
fn card(state: &AppState, name: &str) -> ModelCard {
    let info = state.engine.info();
    ModelCard {
        id: name.to_owned(),
        object: "model",
        created: state.started,
        owned_by: "bellows",
        bellows: ModelCardExt {
            n_ctx: info.n_ctx,
            n_ctx_total: info.n_ctx_total,
            n_ctx_train: info.n_ctx_train,
            slots: info.slots,
            profile: info.profile.clone(),
            alias_of: (name != info.id && !upstream_models(state).iter().any(|m| m == name))
                .then(|| info.id.clone()),
            conversion_rate: state.defaults.measured.conversion_rate,
            measured: (state.defaults.measured != Default::default())
                .then(|| state.defaults.measured.clone()),
            tool_format: state.defaults.protocol.as_str(),
            tool_format_from: state.defaults.protocol_from.clone(),
        },
    }
}

/// `GET /v1/models` (the model and its aliases) and `GET /v1/models/{id}` (any name: the
/// loaded model answers to every name, as llama-server's single-model mode does).
pub fn models(state: &AppState, path: &str) -> Result<Response<Body>, ApiError> {
    let wanted = path
        .strip_prefix("/v1/models/")
        .or_else(|| path.strip_prefix("/models/"));
    match wanted {
        None => {
            let id = &state.engine.info().id;
            let mut names = vec![id.clone()];
            for m in upstream_models(state) {
                if !names.contains(&m) {
                    names.push(m);
                }
            }
            for alias in &state.aliases {
                if !names.contains(alias) {
                    names.push(alias.clone());
                }
            }
            let data = names.iter().map(|n| card(state, n)).collect();
            Ok(body::json(
                StatusCode::OK,
                &ModelList {
                    object: "list",
                    data,
                },
            ))
        }
        Some(id) => Ok(body::json(StatusCode::OK, &card(state, id))),
    }
}

/// What the upstreams serve, when the engine is an upstream pool.
fn upstream_models(state: &AppState) -> Vec<String> {
    state
        .upstream
        .as_ref()
        .map(|p| p.models())
        .unwrap_or_default()
}

/// `GET /props`, in llama-server's shape: the chat template and special tokens the engine
/// renders with (so another bellows in front of this one renders prompts exactly as this one
/// would and sends them to `/v1/completions`), the context size and the slots.
pub fn props(state: &AppState) -> Response<Body> {
    let info = state.engine.info();
    let template = state.engine.chat_template();
    body::json(
        StatusCode::OK,
        &Props {
            chat_template: template.as_ref().map(|t| t.source.clone()),
            bos_token: template.as_ref().map(|t| t.bos_token.clone()),
            eos_token: template.map(|t| t.eos_token),
            default_generation_settings: Some(PropsGeneration {
                n_ctx: Some(info.n_ctx),
            }),
            total_slots: Some(info.slots),
        },
    )
}

pub fn metrics(state: &AppState) -> Response<Body> {
    body::with_type(
        StatusCode::OK,
        body::full(state.metrics.render()),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

pub fn tokenize(state: &AppState, body: Bytes) -> Result<Response<Body>, ApiError> {
    let req: TokenizeRequest = validate::parse(&body)?;
    let tokens = state.engine.tokenize(&req.content)?;
    Ok(body::json(StatusCode::OK, &TokenizeResponse { tokens }))
}
