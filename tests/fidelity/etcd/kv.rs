//! The KV sequences: puts, ranges of every shape, deletes, transactions and their errors.

use super::*;

/// A range built from a number.
type RangeAt = fn(i64) -> pb::RangeRequest;

/// Puts, reads of every shape, deletes, and their errors.
pub(super) async fn kv_basics(side: &mut Side) {
    side.range("empty store: get a", get("a")).await;
    side.put("put a", put("a", "1")).await;
    side.put(
        "put a prev_kv",
        pb::PutRequest {
            prev_kv: true,
            ..put("a", "2")
        },
    )
    .await;
    side.put(
        "put new key prev_kv",
        pb::PutRequest {
            prev_kv: true,
            ..put("b", "x")
        },
    )
    .await;
    side.range("get a", get("a")).await;
    side.range("get missing", get("zz")).await;
    // Keys created in an order unlike their key order, then changed unevenly.
    for (k, v) in [
        ("s/c", "a"),
        ("s/a", "zz"),
        ("s/d", "m"),
        ("s/b", "b"),
        ("s/a", "y"),
        ("s/a", "x"),
        ("s/c", "c"),
        ("s2", "out"),
    ] {
        side.put(&format!("put {k}={v}"), put(k, v)).await;
    }
    side.range("prefix s/", prefix("s/")).await;
    side.range("prefix s", prefix("s")).await;
    side.range(
        "from s/b to the end",
        pb::RangeRequest {
            key: "s/b".into(),
            range_end: vec![0],
            ..Default::default()
        },
    )
    .await;
    side.range(
        "every key",
        pb::RangeRequest {
            key: vec![0],
            range_end: vec![0],
            ..Default::default()
        },
    )
    .await;
    side.range(
        "range s/b..s/d",
        pb::RangeRequest {
            key: "s/b".into(),
            range_end: "s/d".into(),
            ..Default::default()
        },
    )
    .await;
    side.range(
        "range backwards",
        pb::RangeRequest {
            key: "s/d".into(),
            range_end: "s/b".into(),
            ..Default::default()
        },
    )
    .await;
    let targets = [
        ("key", SortTarget::Key),
        ("version", SortTarget::Version),
        ("create", SortTarget::Create),
        ("mod", SortTarget::Mod),
        ("value", SortTarget::Value),
    ];
    let orders = [
        ("none", SortOrder::None),
        ("ascend", SortOrder::Ascend),
        ("descend", SortOrder::Descend),
    ];
    for (tn, t) in targets {
        for (on, o) in orders {
            for limit in [0, 2] {
                let r = pb::RangeRequest {
                    sort_target: t as i32,
                    sort_order: o as i32,
                    limit,
                    ..prefix("s/")
                };
                side.range(&format!("sort by {tn} {on} limit {limit}"), r)
                    .await;
            }
        }
    }
    for limit in [1, 3, 4, 5, -1] {
        let r = pb::RangeRequest {
            limit,
            ..prefix("s/")
        };
        side.range(&format!("limit {limit}"), r).await;
    }
    side.range(
        "count_only",
        pb::RangeRequest {
            count_only: true,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "count_only limit 1",
        pb::RangeRequest {
            count_only: true,
            limit: 1,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "keys_only",
        pb::RangeRequest {
            keys_only: true,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "keys_only count_only",
        pb::RangeRequest {
            keys_only: true,
            count_only: true,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "serializable",
        pb::RangeRequest {
            serializable: true,
            ..prefix("s/")
        },
    )
    .await;
    for rev in 1..=13 {
        let r = pb::RangeRequest {
            revision: rev,
            ..prefix("s/")
        };
        side.range(&format!("prefix s/ at revision {rev}"), r).await;
    }
    side.range(
        "get a at revision 2",
        pb::RangeRequest {
            revision: 2,
            ..get("a")
        },
    )
    .await;
    side.range(
        "future revision",
        pb::RangeRequest {
            revision: 1000,
            ..get("a")
        },
    )
    .await;
    side.range(
        "negative revision",
        pb::RangeRequest {
            revision: -3,
            ..get("a")
        },
    )
    .await;
    for v in [0, 5, 8, 10, 20] {
        let filters: [(&str, RangeAt); 4] = [
            ("min_mod", |v| pb::RangeRequest {
                min_mod_revision: v,
                ..prefix("s/")
            }),
            ("max_mod", |v| pb::RangeRequest {
                max_mod_revision: v,
                ..prefix("s/")
            }),
            ("min_create", |v| pb::RangeRequest {
                min_create_revision: v,
                ..prefix("s/")
            }),
            ("max_create", |v| pb::RangeRequest {
                max_create_revision: v,
                ..prefix("s/")
            }),
        ];
        for (name, f) in filters {
            side.range(&format!("{name} {v}"), f(v)).await;
        }
    }
    side.range(
        "filters with limit and count",
        pb::RangeRequest {
            min_mod_revision: 6,
            limit: 1,
            ..prefix("s/")
        },
    )
    .await;
    // ignore_value / ignore_lease.
    side.put(
        "ignore_value",
        pb::PutRequest {
            ignore_value: true,
            prev_kv: true,
            ..put("a", "")
        },
    )
    .await;
    side.put(
        "ignore_value on a missing key",
        pb::PutRequest {
            ignore_value: true,
            ..put("nope", "")
        },
    )
    .await;
    side.put(
        "ignore_value with a value",
        pb::PutRequest {
            ignore_value: true,
            ..put("a", "v")
        },
    )
    .await;
    side.put(
        "ignore_lease",
        pb::PutRequest {
            ignore_lease: true,
            ..put("a", "3")
        },
    )
    .await;
    side.put(
        "ignore_lease with a lease",
        pb::PutRequest {
            ignore_lease: true,
            ..put_lease("a", "3", 7)
        },
    )
    .await;
    side.put(
        "ignore_lease on a missing key",
        pb::PutRequest {
            ignore_lease: true,
            ..put("nope", "v")
        },
    )
    .await;
    side.put("put with an unknown lease", put_lease("a", "4", 12345))
        .await;
    side.put("put an empty key", put("", "v")).await;
    side.put("put an empty value", put("e", "")).await;
    side.range("get an empty key", get("")).await;
    side.range("get a", get("a")).await;
    side.delete("delete an empty key", del("")).await;
    // Deletes.
    side.delete("delete nothing", del("nope")).await;
    side.delete(
        "delete nothing prev_kv",
        pb::DeleteRangeRequest {
            prev_kv: true,
            ..del("nope")
        },
    )
    .await;
    side.delete(
        "delete b prev_kv",
        pb::DeleteRangeRequest {
            prev_kv: true,
            ..del("b")
        },
    )
    .await;
    side.delete("delete e", del("e")).await;
    side.put("put s/e", put("s/e", "e")).await;
    side.delete(
        "delete s/b..s/d prev_kv",
        pb::DeleteRangeRequest {
            key: "s/b".into(),
            range_end: "s/d".into(),
            prev_kv: true,
        },
    )
    .await;
    side.delete(
        "delete prefix s/",
        pb::DeleteRangeRequest {
            key: "s/".into(),
            range_end: prefix_end("s/"),
            prev_kv: false,
        },
    )
    .await;
    side.range("prefix s after the deletes", prefix("s")).await;
    side.put("put s/a again", put("s/a", "new")).await;
    side.range("s/a recreated", get("s/a")).await;
    side.range(
        "s/a before its deletion",
        pb::RangeRequest {
            revision: 20,
            ..get("s/a")
        },
    )
    .await;
}

/// Compares on every target with every result, nested txns, and the txn errors.
pub(super) async fn txns(side: &mut Side) {
    use CompareResult::{Equal, Greater, Less, NotEqual};
    side.put("txn: put t/k", put("t/k", "m")).await;
    side.put("txn: put t/k again", put("t/k", "m")).await;
    side.put("txn: put t/l", put("t/l", "z")).await;
    let then_else = |compare: Vec<pb::Compare>| pb::TxnRequest {
        compare,
        success: vec![op_get(get("t/k"))],
        failure: vec![op_get(get("t/l"))],
    };
    let results = [("=", Equal), ("!=", NotEqual), ("<", Less), (">", Greater)];
    for key in ["t/k", "t/missing"] {
        for (rn, r) in results {
            let targets = [
                ("version 2", CompareTarget::Version, TargetUnion::Version(2)),
                ("version 0", CompareTarget::Version, TargetUnion::Version(0)),
                (
                    "create 0",
                    CompareTarget::Create,
                    TargetUnion::CreateRevision(0),
                ),
                (
                    "create 30",
                    CompareTarget::Create,
                    TargetUnion::CreateRevision(30),
                ),
                ("mod 31", CompareTarget::Mod, TargetUnion::ModRevision(31)),
                (
                    "value m",
                    CompareTarget::Value,
                    TargetUnion::Value(b"m".to_vec()),
                ),
                (
                    "value empty",
                    CompareTarget::Value,
                    TargetUnion::Value(Vec::new()),
                ),
                ("lease 0", CompareTarget::Lease, TargetUnion::Lease(0)),
            ];
            for (tn, t, u) in targets {
                let c = cmp(key, r, t, u);
                side.txn(&format!("txn: {key} {tn} {rn}"), then_else(vec![c]))
                    .await;
            }
        }
    }
    // A compare over a range: all keys must match.
    for (name, end) in [("t/ prefix", prefix_end("t/")), ("from t/", vec![0])] {
        for v in [0, 1, 2] {
            let c = pb::Compare {
                range_end: end.clone(),
                ..cmp(
                    "t/",
                    Greater,
                    CompareTarget::Version,
                    TargetUnion::Version(v),
                )
            };
            side.txn(&format!("txn: {name} version > {v}"), then_else(vec![c]))
                .await;
        }
    }
    let two = vec![
        cmp(
            "t/k",
            Equal,
            CompareTarget::Version,
            TargetUnion::Version(2),
        ),
        cmp(
            "t/l",
            Equal,
            CompareTarget::Value,
            TargetUnion::Value(b"y".to_vec()),
        ),
    ];
    side.txn("txn: two compares, one false", then_else(two))
        .await;
    side.txn(
        "txn: no compares",
        pb::TxnRequest {
            compare: vec![],
            success: vec![
                op_put(pb::PutRequest {
                    prev_kv: true,
                    ..put("t/k", "n")
                }),
                op_get(prefix("t/")),
                op_del(pb::DeleteRangeRequest {
                    prev_kv: true,
                    ..del("t/l")
                }),
                op_get(prefix("t/")),
            ],
            failure: vec![],
        },
    )
    .await;
    side.txn("txn: empty", pb::TxnRequest::default()).await;
    let nested = pb::TxnRequest {
        compare: vec![cmp(
            "t/k",
            Equal,
            CompareTarget::Value,
            TargetUnion::Value(b"n".to_vec()),
        )],
        success: vec![
            op_put(put("t/a", "1")),
            op_txn(pb::TxnRequest {
                compare: vec![cmp(
                    "t/a",
                    Equal,
                    CompareTarget::Version,
                    TargetUnion::Version(1),
                )],
                success: vec![op_put(put("t/b", "2")), op_get(prefix("t/"))],
                failure: vec![op_put(put("t/c", "3"))],
            }),
            op_txn(pb::TxnRequest {
                compare: vec![cmp(
                    "t/zz",
                    Greater,
                    CompareTarget::Version,
                    TargetUnion::Version(0),
                )],
                success: vec![],
                failure: vec![op_txn(pb::TxnRequest {
                    compare: vec![],
                    success: vec![op_put(put("t/d", "4")), op_get(get("t/d"))],
                    failure: vec![],
                })],
            }),
        ],
        failure: vec![op_get(get("t/k"))],
    };
    side.txn("txn: nested", nested.clone()).await;
    side.txn("txn: nested, now failing", nested).await;
    // Duplicate keys.
    let dup = |success: Vec<pb::RequestOp>| pb::TxnRequest {
        compare: vec![],
        success,
        failure: vec![],
    };
    side.txn(
        "txn: put twice",
        dup(vec![op_put(put("t/x", "1")), op_put(put("t/x", "2"))]),
    )
    .await;
    side.txn(
        "txn: put and delete",
        dup(vec![op_put(put("t/x", "1")), op_del(del("t/x"))]),
    )
    .await;
    side.txn(
        "txn: delete a range and put in it",
        dup(vec![op_del(prefix_del("t/")), op_put(put("t/x", "1"))]),
    )
    .await;
    side.txn(
        "txn: delete twice",
        dup(vec![op_del(del("t/x")), op_del(del("t/x"))]),
    )
    .await;
    side.txn(
        "txn: get and put",
        dup(vec![op_get(get("t/x")), op_put(put("t/x", "1"))]),
    )
    .await;
    side.txn(
        "txn: put twice in the failure branch",
        pb::TxnRequest {
            compare: vec![],
            success: vec![],
            failure: vec![op_put(put("t/x", "1")), op_put(put("t/x", "2"))],
        },
    )
    .await;
    let inner = |s: Vec<pb::RequestOp>, f: Vec<pb::RequestOp>| {
        op_txn(pb::TxnRequest {
            compare: vec![],
            success: s,
            failure: f,
        })
    };
    side.txn(
        "txn: nested put of an outer put",
        dup(vec![
            op_put(put("t/x", "1")),
            inner(vec![op_put(put("t/x", "2"))], vec![]),
        ]),
    )
    .await;
    side.txn(
        "txn: nested else put of an outer put",
        dup(vec![
            op_put(put("t/x", "1")),
            inner(vec![], vec![op_put(put("t/x", "2"))]),
        ]),
    )
    .await;
    side.txn(
        "txn: nested put in both branches",
        dup(vec![inner(
            vec![op_put(put("t/x", "1"))],
            vec![op_put(put("t/x", "2"))],
        )]),
    )
    .await;
    side.txn(
        "txn: two nested txns put one key",
        dup(vec![
            inner(vec![op_put(put("t/y", "1"))], vec![]),
            inner(vec![op_put(put("t/y", "2"))], vec![]),
        ]),
    )
    .await;
    side.txn(
        "txn: nested delete of an outer put",
        dup(vec![
            op_put(put("t/y", "1")),
            inner(vec![op_del(del("t/y"))], vec![]),
        ]),
    )
    .await;
    side.txn("txn: empty op", dup(vec![pb::RequestOp { request: None }]))
        .await;
    side.txn("txn: an empty key", dup(vec![op_put(put("", "1"))]))
        .await;
    side.txn(
        "txn: ignore_value with a value",
        dup(vec![op_put(pb::PutRequest {
            ignore_value: true,
            ..put("t/a", "1")
        })]),
    )
    .await;
    side.txn(
        "txn: put with an unknown lease",
        dup(vec![op_put(put_lease("t/a", "1", 999))]),
    )
    .await;
    side.txn(
        "txn: ignore_value on a missing key",
        dup(vec![op_put(pb::PutRequest {
            ignore_value: true,
            ..put("t/none", "")
        })]),
    )
    .await;
    side.txn(
        "txn: a future revision read",
        dup(vec![op_get(pb::RangeRequest {
            revision: 1000,
            ..get("t/a")
        })]),
    )
    .await;
    let many = |n: usize| {
        (0..n)
            .map(|i| op_put(put(&format!("t/m{i:03}"), "v")))
            .collect()
    };
    side.txn("txn: 128 puts", dup(many(128))).await;
    side.txn("txn: 129 puts", dup(many(129))).await;
    let compares = |n: usize| pb::TxnRequest {
        compare: (0..n)
            .map(|_| {
                cmp(
                    "t/a",
                    Greater,
                    CompareTarget::Version,
                    TargetUnion::Version(0),
                )
            })
            .collect(),
        success: vec![],
        failure: vec![],
    };
    side.txn("txn: 128 compares", compares(128)).await;
    side.txn("txn: 129 compares", compares(129)).await;
    side.txn(
        "txn: 129 gets in the failure branch",
        pb::TxnRequest {
            compare: vec![],
            success: vec![],
            failure: (0..129).map(|_| op_get(get("t/a"))).collect(),
        },
    )
    .await;
    side.range(
        "txn: count t/",
        pb::RangeRequest {
            count_only: true,
            ..prefix("t/")
        },
    )
    .await;
    side.delete("txn: delete t/", prefix_del("t/")).await;
}
