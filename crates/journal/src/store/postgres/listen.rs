//! Word from the journal that a debate has new events, for a replica streaming a debate that
//! another replica runs: one connection of its own `LISTEN`s on `EVENTS_CHANNEL`, to which
//! every write that journals an event notifies (with the debate's id) as it commits. A
//! connection the server drops is opened again, and since notifications sent meanwhile are
//! lost, the listener is then told "anything may have changed".

use super::PgJournal;
use super::pool::{EVENTS_CHANNEL, Opener};
use postgres::fallible_iterator::FallibleIterator as _;
use std::time::Duration;

/// How long a listener whose connection failed waits before trying again, at most.
const LONGEST_RETRY: Duration = Duration::from_secs(5);

impl PgJournal {
    /// Calls `told` with a debate's id whenever a commit journals events for it, on any host
    /// sharing the journal, and with `None` when some may have been missed (at the start, and
    /// after the connection was opened again); for as long as the process lives.
    pub fn watch_events(&self, told: impl Fn(Option<&str>) + Send + 'static) {
        let opener = self.pool.opener();
        let _ = std::thread::Builder::new()
            .name("moot-journal-listen".into())
            .spawn(move || listen(&opener, &told));
    }
}

fn listen(opener: &Opener, told: &dyn Fn(Option<&str>)) {
    let mut retry = Duration::from_millis(100);
    loop {
        let listening = opener().and_then(|mut client| {
            client.batch_execute(&format!("LISTEN {EVENTS_CHANNEL}"))?;
            Ok(client)
        });
        let mut client = match listening {
            Ok(client) => client,
            Err(_) => {
                std::thread::sleep(retry);
                retry = (retry * 2).min(LONGEST_RETRY);
                continue;
            }
        };
        retry = Duration::from_millis(100);
        told(None);
        let mut notifications = client.notifications();
        let mut heard = notifications.blocking_iter();
        // Ends when the connection does.
        while let Ok(Some(notification)) = heard.next() {
            told(Some(notification.payload()));
        }
    }
}
