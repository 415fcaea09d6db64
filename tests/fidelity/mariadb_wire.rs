//! locksim's MySQL client against a real MariaDB 10.11 (`support/real_mariadb.rs`: a
//! fresh server on a free loopback port): the login (`mysql_native_password`), `SELECT`s
//! with numbers, strings and NULL, a syntax error, DDL, `COM_INIT_DB`, an `AUTO_INCREMENT`
//! insert and a duplicate key, a transaction's status flags, `COM_PING`, `COM_QUIT`, and a
//! login refused for an unknown database. Every reply is compared whole, and every
//! difference is listed before the test fails: this is what locksim's own server will be
//! compared with.
//!
//! The other way round, the `mariadb` command-line client (Debian's `mariadb-client`)
//! logs in to locksim's server side ([`ServerConn`] on a loopback socket, answering
//! canned replies): as itself (`mysql_native_password`) and asking for MySQL 8's
//! `caching_sha2_password`, which the server switches to `mysql_native_password`.
//!
//! The server runs with `--skip-grant-tables`, so the password is not checked; the
//! `mysql_native_password` answer itself is unit-tested against a vector computed by hand
//! (`src/net/mysql/tests.rs`).

use crate::support::real_mariadb;
use locksim::testing::mysql::{
    Column, ColumnType, MysqlClient, QueryResult, ServerConn, ServerError, ServerEvent,
    ServerHello, WireError, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// `SERVER_STATUS_AUTOCOMMIT`, the status of a session outside a transaction.
const AUTO: u16 = SERVER_STATUS_AUTOCOMMIT;

fn ok(affected_rows: u64, last_insert_id: u64, status: u16) -> QueryResult {
    QueryResult::Ok {
        affected_rows,
        last_insert_id,
        warnings: 0,
        status,
    }
}

fn err(code: u16, sqlstate: &str, message: &str) -> QueryResult {
    QueryResult::Err(ServerError {
        code,
        sqlstate: sqlstate.into(),
        message: message.into(),
    })
}

/// A result set of `columns` (name, type) and `rows`.
fn rows(columns: &[(&str, ColumnType)], rows: &[&[Option<&str>]]) -> QueryResult {
    QueryResult::Rows {
        columns: columns
            .iter()
            .map(|(name, column_type)| Column {
                name: name.to_string(),
                column_type: *column_type,
            })
            .collect(),
        rows: rows
            .iter()
            .map(|r| r.iter().map(|v| v.map(str::to_string)).collect())
            .collect(),
    }
}

/// The client, and every step whose reply differed from the expected one.
struct Session {
    client: MysqlClient<TcpStream>,
    differences: Vec<String>,
}

impl Session {
    fn compare(&mut self, step: &str, got: Result<QueryResult, WireError>, want: QueryResult) {
        match got {
            Ok(got) if got == want => {}
            Ok(got) => self
                .differences
                .push(format!("{step}:\n  got  {got:?}\n  want {want:?}")),
            Err(e) => panic!("{step}: the connection failed: {e}"),
        }
    }

    async fn query(&mut self, sql: &str, want: QueryResult) {
        let got = self.client.query(sql).await;
        self.compare(sql, got, want);
    }
}

async fn connect(port: u16, database: Option<&str>) -> Result<MysqlClient<TcpStream>, WireError> {
    let stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("MariaDB accepts a connection");
    MysqlClient::connect(stream, "root", "any password", database).await
}

#[tokio::test]
async fn locksim_client_speaks_to_mariadb() {
    let server = real_mariadb::start_server();
    let client = connect(server.port, None).await.expect("a login");
    assert!(
        client.server_version().contains("MariaDB"),
        "{}",
        client.server_version()
    );
    let mut s = Session {
        client,
        differences: Vec::new(),
    };
    use ColumnType::{Long, LongLong, VarString};
    s.query("SELECT 1", rows(&[("1", Long)], &[&[Some("1")]]))
        .await;
    match s.client.query("SELECT @@version_comment LIMIT 1").await {
        Ok(QueryResult::Rows { columns, rows })
            if columns.len() == 1
                && columns[0].name == "@@version_comment"
                && columns[0].column_type == VarString
                && rows.len() == 1
                && rows[0].len() == 1
                && rows[0][0].is_some() => {}
        other => s
            .differences
            .push(format!("SELECT @@version_comment: got {other:?}")),
    }
    let syntax = "You have an error in your SQL syntax; check the manual that corresponds to \
                  your MariaDB server version for the right syntax to use near 'SELEC 1' at \
                  line 1";
    s.query("SELEC 1", err(1064, "42000", syntax)).await;
    s.query("CREATE DATABASE locksim", ok(1, 0, AUTO)).await;
    let got = s.client.init_db("locksim").await;
    s.compare("COM_INIT_DB locksim", got, ok(0, 0, AUTO));
    let got = s.client.init_db("nowhere").await;
    let unknown = err(1049, "42000", "Unknown database 'nowhere'");
    s.compare("COM_INIT_DB nowhere", got, unknown.clone());
    s.query(
        "CREATE TABLE t (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) NOT NULL, \
         owner VARCHAR(64) NULL, UNIQUE KEY name (name)) ENGINE=InnoDB",
        ok(0, 0, AUTO),
    )
    .await;
    let insert = "INSERT INTO t (name) VALUES ('lock')";
    s.query(insert, ok(1, 1, AUTO)).await;
    let duplicate = err(1062, "23000", "Duplicate entry 'lock' for key 'name'");
    s.query(insert, duplicate).await;
    let table = [("id", LongLong), ("name", VarString), ("owner", VarString)];
    s.query(
        "SELECT id, name, owner FROM t",
        rows(&table, &[&[Some("1"), Some("lock"), None]]),
    )
    .await;
    // A transaction shows in the status flags.
    let in_trans = AUTO | SERVER_STATUS_IN_TRANS;
    s.query("BEGIN", ok(0, 0, in_trans)).await;
    s.query(
        "SELECT id FROM t WHERE name = 'lock' FOR UPDATE",
        rows(&[("id", LongLong)], &[&[Some("1")]]),
    )
    .await;
    s.query(
        "UPDATE t SET owner = 'a' WHERE name = 'lock'",
        ok(1, 0, in_trans),
    )
    .await;
    s.query("COMMIT", ok(0, 0, AUTO)).await;
    s.query(
        "SELECT GET_LOCK('l', 0), COUNT(*) AS n FROM t",
        rows(
            &[("GET_LOCK('l', 0)", Long), ("n", LongLong)],
            &[&[Some("1"), Some("1")]],
        ),
    )
    .await;
    let got = s.client.ping().await;
    s.compare("COM_PING", got, ok(0, 0, AUTO));
    let Session {
        client,
        mut differences,
    } = s;
    client.quit().await.expect("COM_QUIT");

    // A login naming its database, and one naming a database that is not there.
    let mut client = connect(server.port, Some("locksim"))
        .await
        .expect("a login into locksim");
    let got = client.query("SELECT name FROM t").await;
    let mut s = Session {
        client,
        differences: std::mem::take(&mut differences),
    };
    s.compare(
        "SELECT name FROM t (logged in to locksim)",
        got,
        rows(&[("name", VarString)], &[&[Some("lock")]]),
    );
    s.client.quit().await.expect("COM_QUIT");
    match connect(server.port, Some("nowhere")).await {
        Err(WireError::LoginRefused(e)) if QueryResult::Err(e.clone()) == unknown => {}
        other => s.differences.push(format!(
            "login into nowhere: got {other:?}, want {unknown:?}"
        )),
    }
    assert!(
        s.differences.is_empty(),
        "replies that differ from MariaDB's:\n{}",
        s.differences.join("\n")
    );
}

/// Serves one connection with a [`ServerConn`]: a login is let in, a query answered with
/// one row `hello`, anything else with OK. Returns the events seen.
async fn serve_canned(mut stream: TcpStream) -> Vec<ServerEvent> {
    let mut conn = ServerConn::new(&ServerHello {
        server_version: "10.11.19-MariaDB-locksim".into(),
        connection_id: 1,
        scramble: *b"locksim-scramble-20b",
        status: AUTO,
    });
    let mut events = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let out = conn.take_output();
        if stream.write_all(&out).await.is_err() || conn.is_closed() {
            return events;
        }
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return events,
            Ok(n) => n,
        };
        conn.receive(&buf[..n]);
        while let Some(event) = conn.next_event().expect("the client speaks the protocol") {
            let reply = match &event {
                ServerEvent::Query(_) => rows(&[("x", ColumnType::VarString)], &[&[Some("hello")]]),
                _ => ok(0, 0, AUTO),
            };
            if event != ServerEvent::Quit {
                conn.reply(&reply).expect("a reply is due");
            }
            events.push(event);
        }
    }
}

#[tokio::test]
async fn the_mariadb_cli_logs_in_to_locksims_server_side() {
    let cli = ["/usr/bin/mariadb", "/usr/local/bin/mariadb"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .expect(
            "the mariadb client is not installed: run the tests with scripts/test, or \
             `apt-get install -y mariadb-client`",
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    for extra in [
        &[][..],
        &["--default-auth=caching_sha2_password", "-Dlocksim"][..],
    ] {
        let server = async {
            let (stream, _) = listener.accept().await.unwrap();
            serve_canned(stream).await
        };
        let client = tokio::process::Command::new(cli)
            .args(["--no-defaults", "-h127.0.0.1", "-uroot", "-ppw", "-N", "-B"])
            .arg(format!("-P{port}"))
            .args(extra)
            .args(["-e", "SELECT 'hello' AS x"])
            .kill_on_drop(true)
            .output();
        let (events, out) = tokio::join!(server, client);
        let out = out.expect("mariadb runs");
        assert!(
            out.status.success(),
            "mariadb {extra:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
        let database = extra.contains(&"-Dlocksim").then(|| "locksim".to_string());
        assert_eq!(
            events.first(),
            Some(&ServerEvent::Login {
                user: "root".into(),
                database,
                found_rows: false,
            }),
            "{events:?}"
        );
        assert!(
            events.contains(&ServerEvent::Query("SELECT 'hello' AS x".into())),
            "{events:?}"
        );
    }
}
