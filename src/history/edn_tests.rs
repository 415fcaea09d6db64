//! Tests of the EDN reader: scalars, collections, comments, tags, discards, and errors that name the line.

use super::*;
use proptest::prelude::*;

#[test]
fn reads_scalars_and_collections() {
    let v = parse(
        r#"{:a 1, :b [nil true false -2 3.5 "x\ny\"" \c \newline], :c #{:k sym}, :d (1 2N)}"#,
    )
    .unwrap();
    assert_eq!(v.get("a"), Some(&Value::Int(1)));
    let b = v.get("b").unwrap().as_seq().unwrap();
    assert_eq!(b[0], Value::Nil);
    assert_eq!(b[1], Value::Bool(true));
    assert_eq!(b[3], Value::Int(-2));
    assert_eq!(b[4], Value::Float(3.5));
    assert_eq!(b[5], Value::Str("x\ny\"".into()));
    assert_eq!(b[6], Value::Char('c'));
    assert_eq!(b[7], Value::Char('\n'));
    assert_eq!(
        v.get("c"),
        Some(&Value::Set(vec![
            Value::kw("k"),
            Value::Symbol("sym".into())
        ]))
    );
    assert_eq!(
        v.get("d"),
        Some(&Value::Vector(vec![Value::Int(1), Value::Int(2)]))
    );
}

#[test]
fn comments_discard_and_tags() {
    let all = parse_all("; hi\n1 #_ 2 3 #inst \"2020\" #jepsen.history.Op{:type :ok}").unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all[1], Value::Int(3));
    assert_eq!(all[3].get("type"), Some(&Value::kw("ok")));
}

#[test]
fn errors_name_the_line() {
    let e = parse_all("[1 2\n 3 {:a}]").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    let e = parse_all("\n\n\"abc").unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    let e = parse_all("1 ]").unwrap_err();
    assert!(e.message.contains("unexpected"), "{e}");
    assert!(parse_all(&"[".repeat(10_000)).is_err());
    assert!(parse_all("99999999999999999999999").is_err());
}

#[test]
fn discards_are_counted_not_recursed() {
    // 50,000 chained discards: no stack overflow, either way.
    let chain = "#_ ".repeat(50_000);
    let e = parse_all(&format!("{chain}1")).unwrap_err();
    assert!(e.message.contains("nothing to discard"), "{e}");
    let all = parse_all(&format!("{chain}{}", "1 ".repeat(50_001))).unwrap();
    assert_eq!(all, vec![Value::Int(1)]);
    let e = read_history_forms(&format!("[{chain}]")).unwrap_err();
    assert!(e.message.contains("before ']'"), "{e}");
    // A discarded form may nest like any other (up to the limit), and `#_ #_ a b`
    // discards both.
    assert_eq!(
        parse_all("#_ [1 [2 {:a #{3}}]] 4").unwrap(),
        vec![Value::Int(4)]
    );
    assert_eq!(parse_all("#_ #_ 1 2 3").unwrap(), vec![Value::Int(3)]);
    assert_eq!(parse("[1 #_ 2]").unwrap(), parse("[1]").unwrap());
    let deep = format!("#_ {}", "[".repeat(10_000));
    assert!(parse_all(&deep)
        .unwrap_err()
        .message
        .contains("nesting deeper"));
}

#[test]
fn duplicates_and_missing_values_are_named() {
    let e = parse("{:a 1\n :b 2\n :a 3}").unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("duplicate key :a"), "{e}");
    let e = parse("#{1 2 1}").unwrap_err();
    assert!(e.message.contains("duplicate element 1"), "{e}");
    assert!(parse("{1 :x 1.0 :y}").is_ok(), "1 and 1.0 differ");
    let e = parse("{:a 1 :value").unwrap_err();
    assert!(e.message.contains("value of key :value"), "{e}");
    let e = parse("{:a 1 :value}").unwrap_err();
    assert!(e.message.contains("key :value has no value"), "{e}");
}

#[test]
fn prefix_returns_the_rest() {
    let (v, rest) = parse_prefix("[1 2]\t:timed-out").unwrap();
    assert_eq!(v, parse("[1 2]").unwrap());
    assert_eq!(rest, "\t:timed-out");
    assert_eq!(parse_prefix("nil").unwrap(), (Value::Nil, ""));
    assert!(parse_prefix("  ").is_err());
    assert!(parse_prefix("[1").is_err());
}

#[test]
fn history_forms_vector_or_lines() {
    let a = read_history_forms("[{:a 1}\n {:a 2}]\n").unwrap();
    assert_eq!(a.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2]);
    let b = read_history_forms("{:a 1}\n\n{:a 2}\n").unwrap();
    assert_eq!(b.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3]);
    assert!(read_history_forms("[{:a 1}").is_err());
}

/// Keep the first of items with equal keys (EDN sets and maps have no duplicates).
fn dedup_by<T>(items: &mut Vec<T>, key: impl Fn(&T) -> Value) {
    let mut seen: Vec<Value> = Vec::new();
    items.retain(|x| {
        let k = key(x);
        if seen.contains(&k) {
            false
        } else {
            seen.push(k);
            true
        }
    });
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (-1e9f64..1e9).prop_map(Value::Float),
        ".*".prop_map(Value::Str),
        "[a-z][a-z0-9-]{0,5}".prop_map(Value::Keyword),
        "[a-z][a-z0-9-]{0,5}"
            .prop_filter("not a literal", |s| !matches!(
                s.as_str(),
                "nil" | "true" | "false"
            ))
            .prop_map(Value::Symbol),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Vector),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|mut v| {
                dedup_by(&mut v, |x| x.clone());
                Value::Set(v)
            }),
            prop::collection::vec((inner.clone(), inner), 0..3).prop_map(|mut m| {
                dedup_by(&mut m, |(k, _)| k.clone());
                Value::Map(m)
            }),
        ]
    })
}

proptest! {
    #[test]
    fn never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_all(&text);
        let _ = read_history_forms(&text);
    }

    #[test]
    fn never_panics_on_ednish(text in "[\\[\\]{}()#_:;\"\\\\ a-z0-9.,\\n+-]{0,60}") {
        let _ = parse_all(&text);
        let _ = read_history_forms(&text);
    }

    #[test]
    fn write_then_read(v in arb_value()) {
        let text = v.to_string();
        prop_assert_eq!(parse(&text).unwrap(), v);
    }
}
