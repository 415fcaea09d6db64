//! Tests of the RESP codec: encoding, decoding (complete, partial, malformed, inline), Redis's
//! error texts, and proptest round trips at any split and on random bytes.

use super::*;
use proptest::prelude::*;

fn enc(v: &Value) -> Vec<u8> {
    v.to_bytes()
}

fn cmd(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let mut out = Vec::new();
    encode_command(&args, &mut out);
    out
}

fn args(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|a| a.as_bytes().to_vec()).collect()
}

#[test]
fn encodes_every_type() {
    assert_eq!(enc(&Value::ok()), b"+OK\r\n");
    assert_eq!(enc(&Value::err("ERR x")), b"-ERR x\r\n");
    assert_eq!(enc(&Value::int(-42)), b":-42\r\n");
    assert_eq!(enc(&Value::bulk(b"foo")), b"$3\r\nfoo\r\n");
    assert_eq!(enc(&Value::bulk(b"")), b"$0\r\n\r\n");
    assert_eq!(enc(&Value::nil()), b"$-1\r\n");
    assert_eq!(enc(&Value::Array(None)), b"*-1\r\n");
    assert_eq!(enc(&Value::array(vec![])), b"*0\r\n");
    assert_eq!(
        enc(&Value::array(vec![Value::int(1), Value::bulk(b"a")])),
        b"*2\r\n:1\r\n$1\r\na\r\n"
    );
}

#[test]
fn newlines_in_lines_become_spaces() {
    assert_eq!(Value::err("ERR a\r\nb"), Value::Error("ERR a  b".into()));
    assert_eq!(enc(&Value::Simple("a\nb".into())), b"+a b\r\n");
}

#[test]
fn accessors() {
    assert_eq!(Value::int(3).as_int(), Some(3));
    assert_eq!(Value::bulk(b"x").as_bulk(), Some(&b"x"[..]));
    assert_eq!(Value::nil().as_bulk(), None);
    assert!(Value::nil().is_nil() && Value::Array(None).is_nil());
    assert!(Value::ok().is_ok() && !Value::simple("PONG").is_ok());
    assert_eq!(Value::err("ERR e").as_error(), Some("ERR e"));
    assert!(Value::err("ERR e").is_error());
    assert_eq!(Value::simple("PONG").as_simple(), Some("PONG"));
    assert_eq!(
        Value::array(vec![Value::int(1)])
            .as_array()
            .map(|a| a.len()),
        Some(1)
    );
}

#[test]
fn decodes_complete_values() {
    assert_eq!(decode(b"+OK\r\n").unwrap(), Some((Value::ok(), 5)));
    assert_eq!(decode(b":-7\r\nrest").unwrap(), Some((Value::int(-7), 5)));
    assert_eq!(decode(b"$-1\r\n").unwrap(), Some((Value::nil(), 5)));
    assert_eq!(decode(b"*-1\r\n").unwrap(), Some((Value::Array(None), 5)));
    assert_eq!(decode(b"$0\r\n\r\n").unwrap(), Some((Value::bulk(b""), 6)));
    assert_eq!(
        decode(b"*2\r\n*1\r\n:1\r\n$2\r\nab\r\n").unwrap(),
        Some((
            Value::array(vec![Value::array(vec![Value::int(1)]), Value::bulk(b"ab")]),
            20
        ))
    );
}

#[test]
fn bulk_strings_are_binary_safe() {
    let v = Value::bulk(b"a\r\nb\0c");
    assert_eq!(decode(&enc(&v)).unwrap(), Some((v.clone(), enc(&v).len())));
}

#[test]
fn partial_frames_need_more() {
    for input in [
        &b""[..],
        b"+O",
        b"+OK\r",
        b":12",
        b"$3\r\nfo",
        b"$3\r\nfoo",
        b"$3\r\nfoo\r",
        b"*2\r\n:1\r\n",
        b"*1\r\n*1\r\n",
    ] {
        assert_eq!(decode(input).unwrap(), None, "{input:?}");
    }
}

#[test]
fn rejects_malformed_values() {
    for input in [
        &b"?x\r\n"[..],
        b":12a\r\n",
        b":+1\r\n",
        b": 1\r\n",
        b":01\r\n",
        b":-0\r\n",
        b":\r\n",
        b":99999999999999999999\r\n",
        b"$-2\r\n",
        b"*-2\r\n",
        b"$536870913\r\n",
        b"$abc\r\n",
        b"$3\r\nfooXY",
        b"+OK\rX",
    ] {
        assert!(decode(input).is_err(), "{input:?}");
    }
    assert_eq!(decode(b"$536870912\r\n").unwrap(), None);
}

#[test]
fn rejects_lines_that_never_end() {
    let long = [b'+']
        .iter()
        .chain([b'a'; MAX_LINE_LEN + 1].iter())
        .copied()
        .collect::<Vec<_>>();
    assert!(decode(&long).is_err());
}

#[test]
fn rejects_deep_nesting_without_overflowing_the_stack() {
    let mut deep = b"*1\r\n".repeat(100_000);
    deep.extend_from_slice(b":1\r\n");
    assert!(decode(&deep).is_err());
    let mut ok = b"*1\r\n".repeat(MAX_DEPTH);
    ok.extend_from_slice(b":1\r\n");
    assert!(decode(&ok).unwrap().is_some());
}

#[test]
fn integer_parsing_matches_string2ll() {
    assert_eq!(parse_i64(b"0"), Some(0));
    assert_eq!(parse_i64(b"-1"), Some(-1));
    assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
    assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
    for bad in [
        &b""[..],
        b"-",
        b"9223372036854775808",
        b"1.5",
        b"1 ",
        b"00",
        b"-0",
        b"+5",
    ] {
        assert_eq!(parse_i64(bad), None, "{bad:?}");
    }
}

#[test]
fn protocol_error_display_and_reply() {
    let e = ProtocolError::new("Protocol error: invalid bulk length");
    assert_eq!(e.to_string(), "Protocol error: invalid bulk length");
    assert_eq!(e.message(), "Protocol error: invalid bulk length");
    assert_eq!(
        e.to_reply(),
        Value::Error("ERR Protocol error: invalid bulk length".into())
    );
    let _: &dyn std::error::Error = &e;
}

#[test]
fn command_roundtrip() {
    let bytes = cmd(&["SET", "k", "v", "PX", "100"]);
    assert_eq!(
        bytes,
        b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$3\r\n100\r\n"
    );
    assert_eq!(
        decode_command(&bytes).unwrap(),
        Some((args(&["SET", "k", "v", "PX", "100"]), bytes.len()))
    );
    for cut in 0..bytes.len() {
        assert_eq!(decode_command(&bytes[..cut]).unwrap(), None, "cut at {cut}");
    }
}

#[test]
fn commands_decode_one_at_a_time() {
    let mut bytes = cmd(&["GET", "a"]);
    let first = bytes.len();
    bytes.extend(cmd(&["GET", "b"]));
    let (a, n) = decode_command(&bytes).unwrap().unwrap();
    assert_eq!((a, n), (args(&["GET", "a"]), first));
    let (b, m) = decode_command(&bytes[n..]).unwrap().unwrap();
    assert_eq!((b, n + m), (args(&["GET", "b"]), bytes.len()));
}

#[test]
fn empty_commands_are_skipped() {
    let mut bytes = b"*0\r\n*-1\r\n\r\n  \n".to_vec();
    let skipped = bytes.len();
    assert_eq!(decode_command(&bytes).unwrap(), None);
    bytes.extend(cmd(&["PING"]));
    assert_eq!(
        decode_command(&bytes).unwrap(),
        Some((args(&["PING"]), bytes.len()))
    );
    assert!(skipped < bytes.len());
}

#[test]
fn inline_commands() {
    assert_eq!(
        decode_command(b"PING\r\n").unwrap(),
        Some((args(&["PING"]), 6))
    );
    assert_eq!(
        decode_command(b"set  k\tv\n").unwrap(),
        Some((args(&["set", "k", "v"]), 9))
    );
    assert_eq!(decode_command(b"GET k").unwrap(), None);
    assert_eq!(
        decode_command(b"SET \"a b\" 'c d' \"\\x41\\n\"\r\n")
            .unwrap()
            .unwrap()
            .0,
        args(&["SET", "a b", "c d", "A\n"])
    );
    assert_eq!(
        decode_command(b"SET 'it\\'s' x\n").unwrap().unwrap().0,
        args(&["SET", "it's", "x"])
    );
    assert_eq!(
        decode_command(b"SET a\"b c\"d\n").unwrap_err().message(),
        "Protocol error: unbalanced quotes in request"
    );
    assert_eq!(
        decode_command(b"SET \"abc\n").unwrap_err().message(),
        "Protocol error: unbalanced quotes in request"
    );
    assert_eq!(
        decode_command(b"SET ab\"cd\" x\n").unwrap().unwrap().0,
        args(&["SET", "abcd", "x"])
    );
}

#[test]
fn too_big_inline_request() {
    let long = vec![b'a'; MAX_LINE_LEN + 1];
    assert_eq!(
        decode_command(&long).unwrap_err().message(),
        "Protocol error: too big inline request"
    );
    assert_eq!(decode_command(&long[..MAX_LINE_LEN]).unwrap(), None);
}

#[test]
fn multibulk_errors_carry_redis_messages() {
    let msg = |b: &[u8]| decode_command(b).unwrap_err().message().to_string();
    assert_eq!(
        msg(b"*1\r\nx3\r\n"),
        "Protocol error: expected '$', got 'x'"
    );
    assert_eq!(msg(b"*x\r\n"), "Protocol error: invalid multibulk length");
    assert_eq!(
        msg(b"*3000000000\r\n"),
        "Protocol error: invalid multibulk length"
    );
    assert_eq!(msg(b"*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
    assert_eq!(
        msg(b"*1\r\n$536870913\r\n"),
        "Protocol error: invalid bulk length"
    );
    assert_eq!(msg(b"*1\r\n$1x\r\n"), "Protocol error: invalid bulk length");
    assert!(decode_command(b"*1\r\n$1\r\naXY").is_err());
    let mut long = b"*".to_vec();
    long.extend(vec![b'1'; MAX_LINE_LEN + 1]);
    assert_eq!(msg(&long), "Protocol error: too big mbulk count string");
    let mut long = b"*1\r\n$".to_vec();
    long.extend(vec![b'1'; MAX_LINE_LEN + 1]);
    assert_eq!(msg(&long), "Protocol error: too big bulk count string");
    // Redis only checks the '$' once the header line is complete.
    assert_eq!(decode_command(b"*1\r\nx3").unwrap(), None);
}

#[test]
fn split_args_edge_cases() {
    assert_eq!(split_args(b""), Some(vec![]));
    assert_eq!(split_args(b"   "), Some(vec![]));
    assert_eq!(split_args(b"\"\""), Some(vec![vec![]]));
    assert_eq!(split_args(b"a\0b c"), Some(args(&["a"])));
    assert_eq!(split_args(b"\"a\\"), None);
    assert_eq!(split_args(b"'a'b"), None);
    assert_eq!(split_args(b"\"\\xzz\""), Some(args(&["xzz"])));
}

fn value_strategy() -> impl Strategy<Value = Value> {
    let line = "[^\r\n]{0,12}";
    let leaf = prop_oneof![
        line.prop_map(Value::Simple),
        line.prop_map(Value::Error),
        any::<i64>().prop_map(Value::Integer),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..24)).prop_map(Value::Bulk),
        Just(Value::Array(None)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        proptest::collection::vec(inner, 0..6).prop_map(|v| Value::Array(Some(v)))
    })
}

proptest! {
    #[test]
    fn prop_roundtrip_at_any_split(values in proptest::collection::vec(value_strategy(), 1..5),
                                   cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        let mut bytes = Vec::new();
        for v in &values {
            v.encode(&mut bytes);
        }
        // Every strict prefix of the first value is incomplete, never an error.
        let first = values[0].to_bytes();
        for cut in 0..first.len() {
            prop_assert_eq!(decode(&first[..cut]).unwrap(), None);
        }
        // Feed the stream in chunks ending at random points, like a socket would.
        let mut ends: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        ends.push(bytes.len());
        ends.sort_unstable();
        let mut buf = Vec::new();
        let mut fed = 0;
        let mut out = Vec::new();
        for end in ends {
            buf.extend_from_slice(&bytes[fed..end]);
            fed = end;
            while let Some((v, n)) = decode(&buf).unwrap() {
                out.push(v);
                buf.drain(..n);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(out, values);
    }

    #[test]
    fn prop_command_roundtrip_at_any_split(
        cmds in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..5), 1..4),
        cut in any::<prop::sample::Index>()) {
        let mut bytes = Vec::new();
        for c in &cmds {
            let refs: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
            encode_command(&refs, &mut bytes);
        }
        let cut = cut.index(bytes.len() + 1);
        let mut buf = bytes[..cut].to_vec();
        let mut out = Vec::new();
        while let Some((a, n)) = decode_command(&buf).unwrap() {
            out.push(a);
            buf.drain(..n);
        }
        buf.extend_from_slice(&bytes[cut..]);
        while let Some((a, n)) = decode_command(&buf).unwrap() {
            out.push(a);
            buf.drain(..n);
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(out, cmds);
    }

    #[test]
    fn prop_random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode(&bytes);
        let _ = decode_command(&bytes);
        let _ = split_args(&bytes);
    }

    #[test]
    fn prop_protocol_shaped_bytes_never_panic(
        parts in proptest::collection::vec(
            prop_oneof![
                Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b":".to_vec()),
                Just(b"+".to_vec()), Just(b"-".to_vec()), Just(b"\r\n".to_vec()),
                Just(b"\r".to_vec()), Just(b"\n".to_vec()), Just(b"-1".to_vec()),
                Just(b"\"".to_vec()), Just(b"'".to_vec()), Just(b"\\x4".to_vec()),
                "[0-9]{1,3}".prop_map(String::into_bytes),
                proptest::collection::vec(any::<u8>(), 0..4),
            ], 0..40)) {
        let bytes = parts.concat();
        if let Ok(Some((_, n))) = decode(&bytes) {
            prop_assert!(n <= bytes.len());
        }
        if let Ok(Some((a, n))) = decode_command(&bytes) {
            prop_assert!(n <= bytes.len() && !a.is_empty());
        }
    }
}
