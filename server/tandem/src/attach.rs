//! `tandem lsp`'s attach socket: once the editor has initialized the server, a listener in the
//! user's runtime directory (`tandem_acp::attach`) serves every front end that connects (the
//! terminal chat, `tandem chat --attach`) with `tandem_acp::serve` on the language server's own
//! session host and front end, so they join the editor's sessions. Composed here, in the
//! binary: `tandem-lsp` knows nothing of ACP, it only calls `ServeOptions::on_initialized`.
//! `tandem lsp --no-attach` turns it off.
//!
//! Each connection is a task of its own: one that fails or panics ends only itself. A server
//! that cannot listen (no runtime directory, one that is not safe, a path too long for a
//! socket) says why in the log and serves the editor as before.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tandem_acp::attach::Listener;
use tracing::{error, info, warn};

/// How long the accept loop waits after a failed `accept` (out of file descriptors, say)
/// before trying again, so that it does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(200);

/// The listener, once the editor has initialized the server.
#[derive(Default)]
pub(crate) struct Attach {
    listener: Mutex<Option<Arc<Listener>>>,
}

impl Attach {
    /// The hook that starts listening when the server is initialized.
    pub(crate) fn hook(self: &Arc<Self>) -> tandem_lsp::OnInitialized {
        let attach = self.clone();
        Arc::new(move |initialized: tandem_lsp::Initialized| attach.start(initialized))
    }

    fn start(&self, initialized: tandem_lsp::Initialized) {
        let tandem_lsp::Initialized {
            host,
            frontend,
            mut roots,
            editor,
        } = initialized;
        let listener = match Listener::bind(roots.borrow_and_update().clone(), editor) {
            Ok(listener) => Arc::new(listener),
            Err(problem) => {
                warn!("front ends cannot attach to this server: {problem}");
                return;
            }
        };
        *self.lock() = Some(listener.clone());
        let follower = listener.clone();
        tokio::spawn(async move {
            while roots.changed().await.is_ok() {
                let now = roots.borrow_and_update().clone();
                if let Err(problem) = follower.set_roots(now) {
                    warn!("the attach endpoint's folders are not updated: {problem}");
                }
            }
        });
        tokio::spawn(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok(stream) => stream,
                    Err(problem) => {
                        warn!("accepting an attaching front end failed: {problem}");
                        tokio::time::sleep(ACCEPT_RETRY).await;
                        continue;
                    }
                };
                info!("a front end attached");
                let (input, output) = stream.into_split();
                let options = tandem_acp::ServeOptions {
                    attach: Some(tandem_acp::Attached {
                        host: host.clone(),
                        frontend: frontend.clone(),
                    }),
                    ..tandem_acp::ServeOptions::default()
                };
                let connection = tokio::spawn(tandem_acp::serve(input, output, options));
                tokio::spawn(async move {
                    match connection.await {
                        Ok(Ok(())) => {}
                        Ok(Err(problem)) => warn!("an attached front end's connection: {problem}"),
                        Err(failure) => {
                            error!("an attached front end's connection failed: {failure}")
                        }
                    }
                });
            }
        });
    }

    /// Removes the socket and its file, before the process exits (the connections end with
    /// it).
    pub(crate) fn close(&self) {
        if let Some(listener) = self.lock().take() {
            listener.close();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Listener>>> {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
