//! `GET /` and `GET /ui/{file}`: the web dashboard's page and files (see
//! [`crate::web::ui`]) while `web.ui` is on, the API's 404 while it is off.

use super::AppState;
use crate::web::ui;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// `GET /`.
pub(super) async fn index(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !state.ui {
        return ui::not_found();
    }
    ui::page(&headers)
}

/// `GET /ui/{file}`.
pub(super) async fn file(
    State(state): State<AppState>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if !state.ui {
        return ui::not_found();
    }
    ui::file(&name, query.as_deref(), &headers)
}
