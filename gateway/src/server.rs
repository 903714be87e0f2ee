//! The HTTP/1.1 server: accept loop, one task per connection, graceful shutdown.
//!
//! On shutdown the listener closes first (new connections are refused), every connection is
//! told to finish its in-flight request and close, and the server waits up to a drain timeout
//! for them; streams still running after that are cut.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::router;
use crate::state::AppState;

/// How long shutdown waits for in-flight requests by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    state: Arc<AppState>,
    drain_timeout: Duration,
}

impl Server {
    pub async fn bind(addr: impl ToSocketAddrs, state: AppState) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Server {
            listener,
            state: Arc::new(state),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        })
    }

    pub fn with_drain_timeout(mut self, t: Duration) -> Server {
        self.drain_timeout = t;
        self
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn state(&self) -> &Arc<AppState> {
        &self.state
    }

    /// Serves until `shutdown` completes, then drains.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let Server {
            listener,
            state,
            drain_timeout,
        } = self;
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        conns.spawn(connection(stream, peer, Arc::clone(&state), stop_rx.clone()));
                    }
                    Err(e) => {
                        // Usually too many open files: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        drop(listener);
        tracing::info!(open = conns.len(), "shutting down: draining connections");
        let _ = stop_tx.send(true);
        let drain = async { while conns.join_next().await.is_some() {} };
        if tokio::time::timeout(drain_timeout, drain).await.is_err() {
            tracing::warn!(
                open = conns.len(),
                "drain timeout: closing remaining connections"
            );
            conns.abort_all();
            while conns.join_next().await.is_some() {}
        }
        tracing::info!("server stopped");
        Ok(())
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    state: Arc<AppState>,
    mut stop: watch::Receiver<bool>,
) {
    let service = service_fn(move |req| router::route(Arc::clone(&state), req));
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    // The guard `wait_for` returns is not `Send`; drop it inside its own future.
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        }
        () = stopped => {
            conn.as_mut().graceful_shutdown();
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}
