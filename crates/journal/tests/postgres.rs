//! The journal on a real PostgreSQL server the test starts itself (`initdb` and `pg_ctl` into
//! a temporary directory, a Unix socket), beside the same calls on SQLite.

#[path = "../../../tests/support/postgres.rs"]
mod server;

use server::Postgres;

/// The harness itself: a server starts as an unprivileged user, takes connections on its
/// socket alone, gives each test a database of its own, and stops when dropped.
#[test]
fn a_real_server_starts_in_a_temporary_directory_and_hands_out_databases() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let (first, second) = (server.database(), server.database());
    assert_ne!(first, second);
    let mut client = postgres::Client::connect(&first, postgres::NoTls).unwrap();
    let row = client
        .query_one(
            "SELECT current_database(), current_setting('listen_addresses')",
            &[],
        )
        .unwrap();
    let (database, listening): (String, String) = (row.get(0), row.get(1));
    assert!(first.ends_with(&format!(
        "/{database}?host={}",
        server.socket_dir().display()
    )));
    assert_eq!(listening, "", "no TCP port: the socket alone");
    let socket = server.socket_dir().to_path_buf();
    drop(client);
    drop(server);
    assert!(
        !socket.exists(),
        "the server stopped and its directory went with it"
    );
}
