//! The peer of `benches/http_bench.sh`: the smallest axum server on the same runtime settings as
//! the sandbox, so the sandbox's request rate is read as a share of what axum itself can do on this
//! machine at that moment (a busy machine slows both alike).

use axum::Router;
use axum::routing::get;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_string());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let app = Router::new().route("/", get(|| async { "Hello, World!" }));
    axum::serve(listener, app).await
}
