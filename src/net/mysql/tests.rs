//! The wire's encoders against its decoders: each packet kind alone, the server state
//! machine and the client talking over an in-memory duplex, and random bytes that must
//! never panic either side.

use super::auth::native_password_response;
use super::capabilities::{
    CLIENT_CONNECT_ATTRS, CLIENT_CONNECT_WITH_DB, CLIENT_FOUND_ROWS, CLIENT_PLUGIN_AUTH,
    CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA, CLIENT_PROTOCOL_41, CLIENT_SECURE_CONNECTION,
    SERVER_CAPABILITIES,
};
use super::command::Command;
use super::handshake::{AuthSwitch, Greeting, HandshakeResponse};
use super::packet::{encode_packet, PacketDecoder, MAX_PAYLOAD};
use super::payload::{put_lenenc_bytes, put_lenenc_int, Reader};
use super::reply::{encode_reply, ReplyDecoder};
use super::*;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

fn hello() -> ServerHello {
    ServerHello {
        server_version: "10.11.19-MariaDB-locksim".into(),
        connection_id: 7,
        scramble: *b"abcdefghij0123456789",
        status: SERVER_STATUS_AUTOCOMMIT,
    }
}

#[test]
fn lenenc_integers_round_trip_at_every_width() {
    for v in [
        0,
        1,
        250,
        251,
        0xFFFF,
        0x1_0000,
        0xFF_FFFF,
        0x100_0000,
        u64::MAX,
    ] {
        let mut out = Vec::new();
        put_lenenc_int(&mut out, v);
        let mut r = Reader::new(&out);
        assert_eq!(r.lenenc_int("x").unwrap(), v);
        assert!(r.is_empty());
        // Every shorter prefix is a typed error, not a panic.
        for cut in 0..out.len() {
            assert!(matches!(
                Reader::new(&out[..cut]).lenenc_int("x"),
                Err(WireError::Malformed { expected: "x" })
            ));
        }
    }
    let mut out = Vec::new();
    put_lenenc_bytes(&mut out, b"hello");
    assert_eq!(Reader::new(&out).lenenc_str("s").unwrap(), "hello");
    assert!(Reader::new(&out[..4]).lenenc_str("s").is_err());
    assert!(Reader::new(&[0xFB]).lenenc_int("n").is_err());
}

#[test]
fn packets_are_cut_out_of_bytes_fed_in_pieces() {
    let mut wire = Vec::new();
    encode_packet(0, b"first", &mut wire).unwrap();
    encode_packet(1, b"", &mut wire).unwrap();
    encode_packet(255, &[7; 300], &mut wire).unwrap();
    let mut d = PacketDecoder::default();
    let mut got = Vec::new();
    for b in &wire {
        d.feed(&[*b]);
        while let Some(p) = d.next_packet().unwrap() {
            got.push((p.seq, p.payload));
        }
    }
    assert_eq!(
        got,
        vec![(0, b"first".to_vec()), (1, vec![]), (255, vec![7; 300])]
    );
    assert!(!d.has_partial());
}

#[test]
fn multi_packet_payloads_are_refused_both_ways() {
    let mut d = PacketDecoder::default();
    d.feed(&[0xFF, 0xFF, 0xFF, 0]);
    assert!(matches!(
        d.next_packet(),
        Err(WireError::MultiPacketPayload)
    ));
    let big = vec![0; MAX_PAYLOAD + 1];
    assert!(matches!(
        encode_packet(0, &big, &mut Vec::new()),
        Err(WireError::PayloadTooLarge { .. })
    ));
}

#[test]
fn greeting_round_trips() {
    let g = Greeting {
        server_version: "10.11.19-MariaDB-locksim".into(),
        connection_id: 42,
        scramble: b"abcdefghij0123456789".to_vec(),
        capabilities: SERVER_CAPABILITIES,
        charset: 45,
        status: SERVER_STATUS_AUTOCOMMIT,
        auth_plugin: "mysql_native_password".into(),
    };
    let bytes = g.encode();
    assert_eq!(Greeting::decode(&bytes).unwrap(), g);
    for cut in 0..bytes.len() - 25 {
        assert!(Greeting::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn handshake_responses_round_trip_under_each_layout() {
    let base = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION;
    for caps in [
        base,
        base | CLIENT_PLUGIN_AUTH,
        base | CLIENT_PLUGIN_AUTH | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
        base | CLIENT_CONNECT_WITH_DB | CLIENT_PLUGIN_AUTH,
    ] {
        let r = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 24,
            charset: 45,
            user: "root".into(),
            auth_response: vec![1; 20],
            database: (caps & CLIENT_CONNECT_WITH_DB != 0).then(|| "locksim".to_string()),
            auth_plugin: (caps & CLIENT_PLUGIN_AUTH != 0)
                .then(|| "caching_sha2_password".to_string()),
        };
        assert_eq!(HandshakeResponse::decode(&r.encode()).unwrap(), r);
    }
    // Connection attributes after the plugin name are skipped.
    let r = HandshakeResponse {
        capabilities: base | CLIENT_PLUGIN_AUTH | CLIENT_CONNECT_ATTRS,
        max_packet: 0,
        charset: 45,
        user: "u".into(),
        auth_response: vec![],
        database: None,
        auth_plugin: Some("mysql_native_password".into()),
    };
    let mut bytes = r.encode();
    bytes.extend_from_slice(&[5, 3, b'_', b'o', b's', 0]);
    assert_eq!(HandshakeResponse::decode(&bytes).unwrap(), r);
    // A pre-4.1 response is refused.
    assert!(matches!(
        HandshakeResponse::decode(&[0; 40]),
        Err(WireError::Unsupported { .. })
    ));
}

#[test]
fn auth_switch_round_trips() {
    let s = AuthSwitch {
        plugin: "mysql_native_password".into(),
        data: b"abcdefghij0123456789".to_vec(),
    };
    assert_eq!(AuthSwitch::decode(&s.encode()).unwrap(), s);
}

#[test]
fn native_password_matches_the_formula_by_hand() {
    // SHA1("pw") XOR SHA1(scramble + SHA1(SHA1("pw"))) for the scramble 1..=20, computed
    // outside locksim; SHA1(SHA1("pw")) is what MariaDB's PASSWORD('pw') shows
    // (*D821809F681A40A6E379B50D0463EFAE20BDD122).
    let scramble: Vec<u8> = (1..=20).collect();
    let expected = "b0df30c74af91ea34514aaab203bd4b707f86375";
    let got: String = native_password_response(b"pw", &scramble)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(got, expected);
    assert!(native_password_response(b"", &scramble).is_empty());
}

fn sample_results() -> Vec<QueryResult> {
    vec![
        QueryResult::Ok {
            affected_rows: 1,
            last_insert_id: 300,
            warnings: 2,
            status: SERVER_STATUS_IN_TRANS,
        },
        QueryResult::Err(ServerError {
            code: 1062,
            sqlstate: "23000".into(),
            message: "Duplicate entry 'a' for key 'name'".into(),
        }),
        QueryResult::Rows {
            columns: vec![
                Column {
                    name: "id".into(),
                    column_type: ColumnType::LongLong,
                },
                Column {
                    name: "name".into(),
                    column_type: ColumnType::VarString,
                },
                Column {
                    name: "GET_LOCK('l', 0)".into(),
                    column_type: ColumnType::Long,
                },
            ],
            rows: vec![
                vec![Some("1".into()), None, Some("1".into())],
                vec![Some("2".into()), Some("x".repeat(300)), None],
            ],
        },
        QueryResult::Rows {
            columns: vec![Column {
                name: "n".into(),
                column_type: ColumnType::Null,
            }],
            rows: vec![],
        },
    ]
}

#[test]
fn replies_round_trip_with_consecutive_sequence_ids() {
    for result in sample_results() {
        let mut wire = Vec::new();
        let next = encode_reply(&result, SERVER_STATUS_AUTOCOMMIT, 1, &mut wire).unwrap();
        let mut d = PacketDecoder::default();
        d.feed(&wire);
        let mut reply = ReplyDecoder::default();
        let mut seq = 1u8;
        let mut decoded = None;
        while let Some(p) = d.next_packet().unwrap() {
            assert_eq!(p.seq, seq);
            seq += 1;
            assert!(decoded.is_none(), "packets after the reply was complete");
            decoded = reply.push(&p.payload).unwrap();
        }
        assert_eq!(next, seq);
        assert_eq!(decoded, Some(result));
    }
}

#[test]
fn commands_round_trip() {
    for c in [
        Command::Quit,
        Command::Ping,
        Command::InitDb("locksim".into()),
        Command::Query("SELECT 1".into()),
        Command::Other(0x16),
    ] {
        assert_eq!(Command::decode(&c.encode()).unwrap(), c);
    }
    assert!(Command::decode(&[]).is_err());
}

/// Drives a [`ServerConn`] over `stream`, answering each event with `answer` (none for
/// quit); returns the events seen.
async fn serve(
    mut stream: DuplexStream,
    answer: impl Fn(&ServerEvent) -> QueryResult,
) -> Vec<ServerEvent> {
    let mut conn = ServerConn::new(&hello());
    let mut events = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let out = conn.take_output();
        stream.write_all(&out).await.unwrap();
        if conn.is_closed() {
            return events;
        }
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            return events;
        }
        conn.receive(&buf[..n]);
        while let Some(event) = conn.next_event().unwrap() {
            if event != ServerEvent::Quit {
                conn.reply(&answer(&event)).unwrap();
            }
            events.push(event);
        }
    }
}

fn ok(status: u16) -> QueryResult {
    QueryResult::Ok {
        affected_rows: 0,
        last_insert_id: 0,
        warnings: 0,
        status,
    }
}

#[tokio::test]
async fn client_and_server_state_machine_talk() {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let samples = sample_results();
    let answers = samples.clone();
    let server = tokio::spawn(serve(server_end, move |event| match event {
        ServerEvent::Query(sql) => answers[sql.parse::<usize>().unwrap()].clone(),
        _ => ok(SERVER_STATUS_AUTOCOMMIT),
    }));
    let mut client = MysqlClient::connect(client_end, "root", "secret", Some("locksim"))
        .await
        .unwrap();
    assert_eq!(client.server_version(), "10.11.19-MariaDB-locksim");
    assert_eq!(client.connection_id(), 7);
    for (i, expected) in samples.iter().enumerate() {
        assert_eq!(&client.query(&i.to_string()).await.unwrap(), expected);
    }
    assert_eq!(client.ping().await.unwrap(), ok(SERVER_STATUS_AUTOCOMMIT));
    assert_eq!(
        client.init_db("other").await.unwrap(),
        ok(SERVER_STATUS_AUTOCOMMIT)
    );
    client.quit().await.unwrap();
    let events = server.await.unwrap();
    assert_eq!(
        events[0],
        ServerEvent::Login {
            user: "root".into(),
            database: Some("locksim".into()),
            found_rows: false,
        }
    );
    assert_eq!(events[events.len() - 3], ServerEvent::Ping);
    assert_eq!(
        events[events.len() - 2],
        ServerEvent::InitDb("other".into())
    );
    assert_eq!(events[events.len() - 1], ServerEvent::Quit);
}

#[tokio::test]
async fn a_refused_login_reaches_the_client_and_closes() {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let refusal = ServerError {
        code: 1049,
        sqlstate: "42000".into(),
        message: "Unknown database 'nope'".into(),
    };
    let answer = QueryResult::Err(refusal.clone());
    let server = tokio::spawn(serve(server_end, move |_| answer.clone()));
    match MysqlClient::connect(client_end, "root", "", Some("nope")).await {
        Err(WireError::LoginRefused(e)) => assert_eq!(e, refusal),
        other => panic!("expected a refused login, got {other:?}"),
    }
    assert_eq!(server.await.unwrap().len(), 1);
}

/// Feeds `payload` as a packet with `seq` and returns the packets the server wrote.
fn exchange(conn: &mut ServerConn, seq: u8, payload: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut wire = Vec::new();
    encode_packet(seq, payload, &mut wire).unwrap();
    conn.receive(&wire);
    let _ = conn.next_event();
    let mut d = PacketDecoder::default();
    d.feed(&conn.take_output());
    std::iter::from_fn(|| d.next_packet().unwrap())
        .map(|p| (p.seq, p.payload))
        .collect()
}

#[test]
fn a_mysql8_client_is_switched_to_native_password_and_unknown_commands_get_1047() {
    let mut conn = ServerConn::new(&hello());
    conn.take_output();
    let response = HandshakeResponse {
        capabilities: CLIENT_PROTOCOL_41
            | CLIENT_SECURE_CONNECTION
            | CLIENT_PLUGIN_AUTH
            | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
            | CLIENT_FOUND_ROWS,
        max_packet: 1 << 24,
        charset: 255,
        user: "app".into(),
        auth_response: vec![9; 32],
        database: None,
        auth_plugin: Some("caching_sha2_password".into()),
    };
    let sent = exchange(&mut conn, 1, &response.encode());
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, 2);
    let switch = AuthSwitch::decode(&sent[0].1).unwrap();
    assert_eq!(switch.plugin, "mysql_native_password");
    assert_eq!(switch.data, b"abcdefghij0123456789");
    // The switch response raises the login (the event was consumed by `exchange`: feed
    // it by hand here to see it).
    let mut wire = Vec::new();
    encode_packet(3, &[1; 20], &mut wire).unwrap();
    conn.receive(&wire);
    assert_eq!(
        conn.next_event().unwrap(),
        Some(ServerEvent::Login {
            user: "app".into(),
            database: None,
            found_rows: true,
        })
    );
    conn.reply(&ok(SERVER_STATUS_AUTOCOMMIT)).unwrap();
    let mut d = PacketDecoder::default();
    d.feed(&conn.take_output());
    assert_eq!(d.next_packet().unwrap().unwrap().seq, 4);
    // COM_STMT_PREPARE (0x16) is not spoken.
    let sent = exchange(&mut conn, 0, &[0x16, b'x']);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, 1);
    let err = super::reply::decode_err(&sent[0].1).unwrap();
    assert_eq!((err.code, err.sqlstate.as_str()), (1047, "08S01"));
    assert!(!conn.is_closed());
    assert!(matches!(
        conn.reply(&ok(0)),
        Err(WireError::NothingToAnswer)
    ));
}

#[test]
fn a_bad_handshake_is_answered_with_1043_and_closes() {
    let mut conn = ServerConn::new(&hello());
    conn.take_output();
    let mut wire = Vec::new();
    encode_packet(1, &[0xFF; 10], &mut wire).unwrap();
    conn.receive(&wire);
    assert!(conn.next_event().is_err());
    assert!(conn.is_closed());
    let mut d = PacketDecoder::default();
    d.feed(&conn.take_output());
    let err = super::reply::decode_err(&d.next_packet().unwrap().unwrap().payload).unwrap();
    assert_eq!(err.code, 1043);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic_the_server(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8)) {
        let mut conn = ServerConn::new(&hello());
        for chunk in chunks {
            conn.receive(&chunk);
            while let Ok(Some(event)) = conn.next_event() {
                if event != ServerEvent::Quit {
                    let _ = conn.reply(&ok(0));
                }
            }
            conn.take_output();
        }
    }

    #[test]
    fn random_commands_after_a_login_never_panic_the_server(packets in prop::collection::vec((any::<u8>(), prop::collection::vec(any::<u8>(), 0..48)), 0..12)) {
        let mut conn = ServerConn::new(&hello());
        let login = HandshakeResponse {
            capabilities: CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION,
            max_packet: 1 << 24,
            charset: 45,
            user: "u".into(),
            auth_response: vec![],
            database: None,
            auth_plugin: None,
        };
        let mut wire = Vec::new();
        encode_packet(1, &login.encode(), &mut wire).unwrap();
        conn.receive(&wire);
        let logged_in = matches!(conn.next_event(), Ok(Some(ServerEvent::Login { .. })));
        prop_assert!(logged_in);
        conn.reply(&ok(0)).unwrap();
        for (seq, payload) in packets {
            let mut wire = Vec::new();
            // Mostly well-ordered commands, sometimes out of order.
            encode_packet(seq % 4 / 3, &payload, &mut wire).unwrap();
            conn.receive(&wire);
            while let Ok(Some(event)) = conn.next_event() {
                if event != ServerEvent::Quit {
                    prop_assert!(conn.reply(&sample_results()[2]).is_ok());
                }
            }
            conn.take_output();
        }
    }

    #[test]
    fn random_packets_never_panic_the_decoders(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut d = PacketDecoder::default();
        d.feed(&bytes);
        let _ = d.next_packet();
        let _ = Greeting::decode(&bytes);
        let _ = HandshakeResponse::decode(&bytes);
        let _ = AuthSwitch::decode(&bytes);
        let _ = Command::decode(&bytes);
        let mut reply = ReplyDecoder::default();
        for part in bytes.chunks(7) {
            let _ = reply.push(part);
        }
    }
}
