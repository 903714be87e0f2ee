//! The endpoints that do not generate: `/health`, `/v1/models`, `/metrics`, `/tokenize`.

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::api::request::TokenizeRequest;
use crate::api::response::{Health, ModelCard, ModelCardExt, ModelList, TokenizeResponse};
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
            n_ctx_train: info.n_ctx_train,
            slots: info.slots,
            profile: info.profile.clone(),
            alias_of: (name != info.id).then(|| info.id.clone()),
            conversion_rate: state.defaults.measured.conversion_rate,
            measured: (state.defaults.measured != Default::default())
                .then(|| state.defaults.measured.clone()),
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
            let mut data = vec![card(state, id)];
            for alias in state.aliases.iter().filter(|a| *a != id) {
                data.push(card(state, alias));
            }
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
