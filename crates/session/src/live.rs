//! A running debate seen from another process: the process that runs it serves every event it
//! emits (stream deltas included) as sanitized NDJSON on a Unix socket beside the journal,
//! `live/<id>.sock`, mode 0600; a viewer connects and reads them. The journal stays the record:
//! a viewer takes each event that is journaled from the journal (the socket line tells it
//! there is one) and only the deltas from the socket.

use crate::debate::Event;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::broadcast;

/// How many lines a slow viewer may fall behind before it misses some (it then misses only
/// deltas: what is journaled it reads from the journal).
const BACKLOG: usize = 4096;

/// Where debate `id`'s socket is, under `dir` (the journal's `live/` directory).
pub fn socket_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.sock"))
}

/// Why a running debate cannot serve its socket (it runs on without viewers).
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is served by another process", .0.display())]
    Taken(PathBuf),
}

/// The socket a running debate serves, while it runs. Dropping it stops serving and removes
/// the socket file.
pub struct Server {
    path: PathBuf,
    lines: broadcast::Sender<Arc<str>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves debate `id` under `dir`; `None` when the socket cannot be made (the debate runs
    /// on, without viewers; the reason is returned for a notice).
    pub fn start(dir: &Path, id: &str) -> Result<Server, LiveError> {
        let path = socket_path(dir, id);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LiveError::Io { path, source }
        };
        create_private_dir(dir).map_err(io(dir))?;
        // A socket file left by a process that died is stale: nobody answers on it.
        if path.exists() {
            if std::os::unix::net::UnixStream::connect(&path).is_ok() {
                return Err(LiveError::Taken(path));
            }
            let _ = std::fs::remove_file(&path);
        }
        let listener = UnixListener::bind(&path).map_err(io(&path))?;
        set_mode(&path, 0o600).map_err(io(&path))?;
        let (lines, _) = broadcast::channel::<Arc<str>>(BACKLOG);
        let sender = lines.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, sender.subscribe()));
            }
        });
        Ok(Server {
            path,
            lines,
            accept,
        })
    }

    /// Sends `event` to every viewer connected now.
    pub fn publish(&self, event: &Event) {
        if self.lines.receiver_count() == 0 {
            return;
        }
        let mut line = event_line(event);
        line.push('\n');
        let _ = self.lines.send(Arc::from(line));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One viewer: every line from when it connected, until it leaves or the debate ends.
async fn serve(mut stream: UnixStream, mut lines: broadcast::Receiver<Arc<str>>) {
    loop {
        let line = match lines.recv().await {
            Ok(line) => line,
            // Fallen behind: the deltas it missed are gone; say so, and go on.
            Err(broadcast::error::RecvError::Lagged(_)) => Arc::from("{\"type\":\"lagged\"}\n"),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if stream.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// An event as one sanitized JSON line (no newline), as headless prints it.
pub fn event_line(event: &Event) -> String {
    let mut value = serde_json::to_value(event).unwrap_or_else(
        |e| serde_json::json!({"type": "error", "message": format!("unprintable event: {e}")}),
    );
    crate::sanitize::clean_json(&mut value);
    value.to_string()
}

/// What a viewer reads from a debate's socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// A stream delta: shown at once, never journaled.
    Delta(Box<Event>),
    /// Something that is journaled happened: read the journal for it.
    Journaled,
    /// The process stopped serving (the debate ended, paused, or the process died).
    Closed,
}

/// A viewer's connection to a running debate's socket.
pub struct Listener {
    lines: tokio::io::Lines<BufReader<UnixStream>>,
}

impl Listener {
    /// Connects to debate `id`'s socket under `dir`; `None` when nobody serves it.
    pub async fn connect(dir: &Path, id: &str) -> Option<Listener> {
        let stream = UnixStream::connect(socket_path(dir, id)).await.ok()?;
        Some(Listener {
            lines: BufReader::new(stream).lines(),
        })
    }

    /// The next thing heard.
    pub async fn next(&mut self) -> Heard {
        let Ok(Some(line)) = self.lines.next_line().await else {
            return Heard::Closed;
        };
        match serde_json::from_str::<Event>(&line) {
            Ok(delta @ Event::TurnDelta { .. }) => Heard::Delta(Box::new(delta)),
            // Anything else (`lagged` too, or a line this version does not read): the journal
            // has it.
            _ => Heard::Journaled,
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::Phase;
    use std::os::unix::fs::PermissionsExt;

    fn delta(text: &str) -> Event {
        Event::TurnDelta {
            seat: "A".into(),
            round: 1,
            phase: Phase::Argument,
            text: text.into(),
        }
    }

    /// A viewer hears deltas (sanitized) and a poke for what is journaled; the socket is
    /// private, a stale one is replaced, and it goes when the server does.
    #[tokio::test]
    async fn a_viewer_hears_deltas_and_pokes_and_the_socket_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live");
        std::fs::create_dir_all(&live).unwrap();
        // A stale socket file from a process that died.
        drop(std::os::unix::net::UnixListener::bind(socket_path(&live, "DEB-1")).unwrap());
        let server = Server::start(&live, "DEB-1").unwrap();
        let mode = std::fs::metadata(socket_path(&live, "DEB-1"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(Server::start(&live, "DEB-1").is_err(), "served twice");
        let mut viewer = Listener::connect(&live, "DEB-1").await.unwrap();
        // The server learns of the viewer when it accepts it: publish until it is heard.
        let first = loop {
            server.publish(&delta("hello \u{1b}[2Jthere"));
            if let Ok(heard) =
                tokio::time::timeout(std::time::Duration::from_millis(20), viewer.next()).await
            {
                break heard;
            }
        };
        assert_eq!(first, Heard::Delta(Box::new(delta("hello there"))));
        server.publish(&Event::Notice {
            message: "x".into(),
        });
        let mut heard = viewer.next().await;
        while heard == Heard::Delta(Box::new(delta("hello there"))) {
            heard = viewer.next().await;
        }
        assert_eq!(heard, Heard::Journaled);
        drop(server);
        assert_eq!(viewer.next().await, Heard::Closed);
        assert!(!socket_path(&live, "DEB-1").exists());
        assert!(Listener::connect(&live, "DEB-1").await.is_none());
    }
}
