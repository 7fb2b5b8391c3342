//! The one place an error becomes a response: its kind's status, the interface's body, and
//! `Retry-After` on a quota refusal.

use crate::sandbox::error::AppError;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub fn status_of(e: &AppError) -> StatusCode {
    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let mut resp = (status_of(&self), axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert("retry-after", v);
        }
        resp
    }
}
