//! The signals that end a run politely (Ctrl-C, SIGTERM, a hung-up terminal), for every face:
//! a running debate pauses instead of dying mid-write.

/// Resolves when the user interrupts (Ctrl-C), the terminal hangs up, or we are told to stop.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hangup = signal(SignalKind::hangup()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            _ = async { match hangup.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Who is answering at this terminal, for the journal: the login name, never anything secret.
pub fn user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .map(|name| moot_domain::sanitize::clean(name.trim()))
        .find(|name| !name.is_empty() && name.len() <= 64)
        .unwrap_or_else(|| "the user".into())
}
