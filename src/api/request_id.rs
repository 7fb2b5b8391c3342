//! The request id a server gives every request (README "Operations"), as the task serving it knows
//! it: so what that task sends on (the gateway's upstream calls, the executions it runs) carries
//! the same id, and one request can be followed from the supervisor's click to the service.

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    /// The id of the request this task serves, so what it sends on (the gateway's upstream
    /// calls) carries it too.
    static CURRENT: String;
}

/// The id of the request the current task serves.
pub fn request_id() -> Option<String> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Runs `f` as part of request `id` (a task spawned for a request keeps its id this way).
pub async fn with_request_id<F: std::future::Future>(id: Option<String>, f: F) -> F::Output {
    match id {
        Some(id) => CURRENT.scope(id, f).await,
        None => f.await,
    }
}
