//! The lease, watch, compaction, lock-recipe, expiry, binary-key and other sequences.

use super::*;

/// Lease ids chosen by the test, so that both sides' are the same.
const LEASE_BASE: i64 = 0x7000;

/// Grants, revokes, keep-alives, time-to-live, the lease list and their errors.
pub(super) async fn leases(side: &mut Side) {
    let a = LEASE_BASE + 1;
    let b = LEASE_BASE + 2;
    side.leases("leases: none").await;
    side.grant("grant a ttl 60", a, 60).await;
    side.ttl("ttl of a", a, true).await;
    side.grant("grant a again", a, 30).await;
    side.grant("grant b ttl 30", b, 30).await;
    for (n, ttl) in [(3, 1), (4, 0), (5, -5), (6, 2), (7, 3)] {
        side.grant(&format!("grant ttl {ttl}"), LEASE_BASE + n, ttl)
            .await;
    }
    side.grant("grant too large a ttl", LEASE_BASE + 8, 9_000_000_001)
        .await;
    side.grant("grant the largest ttl", LEASE_BASE + 8, 9_000_000_000)
        .await;
    side.grant("grant a negative id", -5, 10).await;
    side.revoke("revoke the negative id", -5).await;
    side.leases("leases: after grants").await;
    side.put("put l/1 under a", put_lease("l/1", "1", a)).await;
    side.put("put l/2 under a", put_lease("l/2", "2", a)).await;
    side.put("put l/3 under b", put_lease("l/3", "3", b)).await;
    side.put(
        "move l/2 to b",
        pb::PutRequest {
            prev_kv: true,
            ..put_lease("l/2", "2", b)
        },
    )
    .await;
    side.put(
        "put l/1 again ignore_lease",
        pb::PutRequest {
            ignore_lease: true,
            ..put("l/1", "1b")
        },
    )
    .await;
    side.range("l/ with leases", prefix("l/")).await;
    side.ttl("ttl of a with keys", a, true).await;
    side.ttl("ttl of b with keys", b, true).await;
    side.ttl("ttl of b without keys", b, false).await;
    side.ttl("ttl of an unknown lease", 4242, true).await;
    side.ttl("ttl of lease 0", 0, false).await;
    let mut k = side.keep_alive_open("keep-alive a", a).await;
    side.keep_alive(&mut k, "keep-alive b", b).await;
    side.keep_alive(&mut k, "keep-alive unknown", 4242).await;
    side.keep_alive(&mut k, "keep-alive a again", a).await;
    side.ttl("ttl of a after keep-alive", a, false).await;
    side.revoke("revoke b", b).await;
    side.range("l/ after revoking b", prefix("l/")).await;
    side.keep_alive(&mut k, "keep-alive revoked b", b).await;
    side.ttl("ttl of revoked b", b, true).await;
    side.revoke("revoke b again", b).await;
    side.revoke("revoke unknown", 4242).await;
    side.revoke("revoke lease 0", 0).await;
    side.put("put under revoked b", put_lease("l/4", "4", b))
        .await;
    side.revoke("revoke a keyless lease", LEASE_BASE + 7).await;
    side.leases("leases: after revokes").await;
    for n in [3, 4, 5, 6, 8] {
        side.revoke(&format!("revoke lease {n}"), LEASE_BASE + n)
            .await;
    }
    side.revoke("revoke a", a).await;
    side.leases("leases: all revoked").await;
    side.range("l/ after revoking a", prefix("l/")).await;
    drop(k);
}

/// Watches: history replay, prefixes, filters, prev_kv, cancels, ids and errors.
pub(super) async fn watches(side: &mut Side) {
    let base = side
        .put("watch: put w/a", put("w/a", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.put("watch: put w/b", put("w/b", "1")).await;
    side.put("watch: put w/a again", put("w/a", "2")).await;
    side.delete("watch: delete w/b", del("w/b")).await;
    let mut w = side
        .watch_wanting(
            "watch w/a from its first revision",
            watch_create(b"w/a", b"", base),
            2,
        )
        .await;
    side.watch_send(
        &mut w,
        "watch w/ prefix from the start",
        watch_create(b"w/", &prefix_end("w/"), base),
        2,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch w/ prefix from now",
        watch_create(b"w/", &prefix_end("w/"), 0),
        1,
    )
    .await;
    let filtered = pb::WatchCreateRequest {
        key: b"w/".to_vec(),
        range_end: prefix_end("w/"),
        start_revision: base,
        prev_kv: true,
        filters: vec![pb::watch_create_request::FilterType::Noput as i32],
        ..Default::default()
    };
    side.watch_send(
        &mut w,
        "watch w/ deletes with prev_kv",
        watch_create_with(filtered),
        2,
    )
    .await;
    let no_delete = pb::WatchCreateRequest {
        key: b"w/".to_vec(),
        range_end: prefix_end("w/"),
        prev_kv: true,
        filters: vec![pb::watch_create_request::FilterType::Nodelete as i32],
        ..Default::default()
    };
    side.watch_send(
        &mut w,
        "watch w/ puts with prev_kv",
        watch_create_with(no_delete),
        1,
    )
    .await;
    side.put("watch: put w/c", put("w/c", "1")).await;
    side.watch_responses(&mut w, "events of w/c", 3, Duration::from_secs(3))
        .await;
    side.put("watch: put w/a a third time", put("w/a", "3"))
        .await;
    side.watch_responses(&mut w, "events of w/a", 5, Duration::from_secs(3))
        .await;
    side.delete("watch: delete w/ prefix", prefix_del("w/"))
        .await;
    side.watch_responses(&mut w, "events of the delete", 4, Duration::from_secs(3))
        .await;
    side.txn(
        "watch: a txn of two puts",
        pb::TxnRequest {
            compare: vec![],
            success: vec![op_put(put("w/x", "1")), op_put(put("w/y", "1"))],
            failure: vec![],
        },
    )
    .await;
    side.watch_responses(&mut w, "events of the txn", 3, Duration::from_secs(3))
        .await;
    side.watch_send(&mut w, "cancel watch 1", watch_cancel(1), 1)
        .await;
    side.watch_send(&mut w, "cancel watch 1 again", watch_cancel(1), 0)
        .await;
    side.watch_send(&mut w, "cancel an unknown watch", watch_cancel(77), 0)
        .await;
    side.put("watch: put w/x after the cancel", put("w/x", "2"))
        .await;
    side.watch_responses(&mut w, "events after the cancel", 2, Duration::from_secs(3))
        .await;
    let with_id = |id: i64| pb::WatchCreateRequest {
        key: b"w/z".to_vec(),
        watch_id: id,
        ..Default::default()
    };
    side.watch_send(
        &mut w,
        "watch with a chosen id",
        watch_create_with(with_id(100)),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch with a duplicate id",
        watch_create_with(with_id(100)),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch with the next id",
        watch_create(b"w/z", b"", 0),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch an empty range",
        watch_create(b"w/z", b"w/a", 0),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch from a future revision",
        watch_create(b"w/z", b"", 1000),
        1,
    )
    .await;
    side.put("watch: put w/z", put("w/z", "1")).await;
    side.watch_responses(&mut w, "events of w/z", 4, Duration::from_secs(3))
        .await;
    // The Mutex's waitDeletes on a key that is already gone: its delete is replayed.
    let rev = side
        .put("watch: put w/gone", put("w/gone", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.delete("watch: delete w/gone", del("w/gone")).await;
    side.watch_send(
        &mut w,
        "watch w/gone from before its delete",
        watch_create(b"w/gone", b"", rev),
        2,
    )
    .await;
    drop(w);
    side.delete("watch: clean up", prefix_del("w/")).await;
}

/// Compaction: reads, txns and watches before it, compacting again, and a future one.
pub(super) async fn compaction(side: &mut Side) {
    let before = side
        .put("compact: put c/a", put("c/a", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.put("compact: put c/a again", put("c/a", "2")).await;
    let at = side
        .put("compact: put c/b", put("c/b", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.compact("compact at c/b's revision", at).await;
    side.range(
        "read before the compaction",
        pb::RangeRequest {
            revision: before,
            ..prefix("c/")
        },
    )
    .await;
    side.range(
        "read at the compaction",
        pb::RangeRequest {
            revision: at,
            ..prefix("c/")
        },
    )
    .await;
    side.range("read now", prefix("c/")).await;
    side.txn(
        "txn reading before the compaction",
        pb::TxnRequest {
            compare: vec![],
            success: vec![op_get(pb::RangeRequest {
                revision: before,
                ..prefix("c/")
            })],
            failure: vec![],
        },
    )
    .await;
    side.compact("compact there again", at).await;
    side.compact("compact before", before).await;
    side.compact("compact in the future", at + 100).await;
    let mut w = side
        .watch(
            "watch from before the compaction",
            watch_create(b"c/", &prefix_end("c/"), before),
        )
        .await;
    side.watch_responses(&mut w, "its cancel", 1, Duration::from_secs(3))
        .await;
    side.watch_send(
        &mut w,
        "watch from the compaction",
        watch_create(b"c/", &prefix_end("c/"), at),
        2,
    )
    .await;
    drop(w);
    side.delete("compact: clean up", prefix_del("c/")).await;
}

/// etcd's `concurrency.Mutex` (client/v3/concurrency/mutex.go, 3.4) by three sessions,
/// round after round: the acquiring txn, the re-entrant txn of a holder, `waitDeletes`
/// (the last key created before one's own, then a watch for its delete), the release.
pub(super) async fn mutex(side: &mut Side, rounds: usize) {
    const PFX: &str = "/lock/m/";
    let sessions: Vec<i64> = (0..3).map(|i| LEASE_BASE + 0x100 + i).collect();
    for (i, &l) in sessions.iter().enumerate() {
        side.grant(&format!("mutex: session {i}"), l, 60).await;
    }
    let mut streams = Vec::new();
    for i in 0..3 {
        // A watch on nothing, to open each session's stream.
        let w = side
            .watch(
                &format!("mutex: open stream {i}"),
                watch_create(b"/nothing", b"", 0),
            )
            .await;
        streams.push(w);
    }
    let mut next_watch = [1i64; 3];
    for round in 0..rounds {
        let mut mine = Vec::new();
        for (i, &l) in sessions.iter().enumerate() {
            let my_key = format!("{PFX}{l:x}");
            let t = pb::TxnRequest {
                compare: vec![cmp(
                    &my_key,
                    CompareResult::Equal,
                    CompareTarget::Create,
                    TargetUnion::CreateRevision(0),
                )],
                success: vec![op_put(put_lease(&my_key, "", l)), op_get(first_create(PFX))],
                failure: vec![op_get(get(&my_key)), op_get(first_create(PFX))],
            };
            let r = side
                .txn(&format!("round {round}: lock txn {i}"), t.clone())
                .await
                .unwrap_or_else(|| panic!("round {round}: lock txn {i} failed"));
            let my_rev = r.header.map_or(0, |h| h.revision);
            mine.push((my_key, my_rev, t));
        }
        // The holder locks again: the failure branch reads its own key.
        let again = mine[0].2.clone();
        side.txn(&format!("round {round}: relock 0"), again).await;
        // Waiters look for the last key created before theirs and watch for its delete.
        for i in 1..3 {
            let r = side
                .range(
                    &format!("round {round}: waitDeletes {i}"),
                    last_create_before(PFX, mine[i].1 - 1),
                )
                .await;
            let r = r.unwrap_or_else(|| panic!("round {round}: waitDeletes {i} failed"));
            let key = r.kvs.first().map(|k| k.key.clone()).unwrap_or_default();
            let rev = r.header.map_or(0, |h| h.revision);
            let req = pb::WatchCreateRequest {
                key,
                start_revision: rev,
                ..Default::default()
            };
            side.watch_send(
                &mut streams[i],
                &format!("round {round}: watch predecessor {i}"),
                watch_create_with(req),
                1,
            )
            .await;
        }
        for i in 0..3 {
            side.delete(&format!("round {round}: unlock {i}"), del(&mine[i].0))
                .await;
            if i + 1 < 3 {
                let n = i + 1;
                let w = &mut streams[n];
                side.watch_responses(
                    w,
                    &format!("round {round}: {n} sees the delete"),
                    1,
                    Duration::from_secs(3),
                )
                .await;
                let id = next_watch[n];
                next_watch[n] += 1;
                side.watch_send(
                    w,
                    &format!("round {round}: {n} cancels"),
                    watch_cancel(id),
                    1,
                )
                .await;
                side.range(
                    &format!("round {round}: waitDeletes {n} again"),
                    last_create_before(PFX, mine[n].1 - 1),
                )
                .await;
            }
        }
    }
    side.range("mutex: nothing left", prefix(PFX)).await;
    for (i, &l) in sessions.iter().enumerate() {
        side.revoke(&format!("mutex: close session {i}"), l).await;
    }
}

/// Leases that expire: their keys go, as DELETE events, and the leases with them. A TTL
/// below the minimum is raised to it.
pub(super) async fn expiry(side: &mut Side) {
    let short = LEASE_BASE + 0x200;
    let raised = LEASE_BASE + 0x201;
    let kept = LEASE_BASE + 0x202;
    side.grant("expiry: grant ttl 2", short, 2).await;
    side.put("expiry: x/1 under it", put_lease("x/1", "1", short))
        .await;
    side.grant("expiry: grant ttl 1 (raised)", raised, 1).await;
    side.put("expiry: x/2 under it", put_lease("x/2", "2", raised))
        .await;
    side.grant("expiry: grant ttl 3, kept alive", kept, 3).await;
    side.put("expiry: x/3 under it", put_lease("x/3", "3", kept))
        .await;
    let req = pb::WatchCreateRequest {
        key: b"x/".to_vec(),
        range_end: prefix_end("x/"),
        prev_kv: true,
        ..Default::default()
    };
    let mut w = side.watch("expiry: watch x/", watch_create_with(req)).await;
    let mut k = side.keep_alive_open("expiry: keep-alive", kept).await;
    let started = Instant::now();
    let mut events: Vec<mvccpb::Event> = Vec::new();
    while started.elapsed() < Duration::from_millis(4500) {
        let r = tokio::time::timeout(Duration::from_millis(500), w.rx.message()).await;
        if let Ok(Ok(Some(r))) = r {
            events.extend(r.events);
        }
        k.tx.send(pb::LeaseKeepAliveRequest { id: kept })
            .expect("open");
        let _ = tokio::time::timeout(Duration::from_secs(1), k.rx.message()).await;
        if events.len() >= 2 {
            break;
        }
    }
    // The two revocations come in either order (etcd revokes the leases that expired
    // together in goroutines of their own): the events are compared by key, their
    // revisions as a set.
    let mut revs: Vec<i64> = events
        .iter_mut()
        .map(|e| {
            let kv = e.kv.get_or_insert_with(Default::default);
            std::mem::take(&mut kv.mod_revision)
        })
        .collect();
    revs.sort();
    let mut events: Vec<String> = events.iter().map(event_str).collect();
    events.sort();
    side.record("expiry: the deletes", format!("{events:?} at {revs:?}"));
    side.watch_responses(&mut w, "expiry: nothing more", 0, Duration::ZERO)
        .await;
    side.range("expiry: x/ after", prefix("x/")).await;
    side.ttl("expiry: ttl of the expired lease", short, true)
        .await;
    side.ttl("expiry: ttl of the raised lease", raised, true)
        .await;
    side.keep_alive(&mut k, "expiry: keep-alive of an expired lease", short)
        .await;
    side.put(
        "expiry: put under an expired lease",
        put_lease("x/4", "4", short),
    )
    .await;
    side.leases("expiry: leases").await;
    side.revoke("expiry: revoke the kept one", kept).await;
    side.watch_responses(&mut w, "expiry: its delete", 1, Duration::from_secs(3))
        .await;
}

/// Methods and services the server does not have, and the cluster's member list.
pub(super) async fn misc(side: &mut Side) {
    let mut grpc = tonic::client::Grpc::new(side.channel.clone());
    for path in ["/etcdserverpb.KV/Nope", "/etcdserverpb.Nope/Range", "/nope"] {
        let codec = tonic_prost::ProstCodec::<pb::RangeRequest, pb::RangeResponse>::default();
        let s = match grpc.ready().await {
            Ok(()) => {
                let req = tonic::Request::new(get("a"));
                let path = http::uri::PathAndQuery::from_static(path);
                render(grpc.unary(req, path, codec).await, range_str)
            }
            Err(e) => format!("not ready: {e}"),
        };
        side.record(&format!("unknown method {path}"), s);
    }
    side.range("after unknown methods", get("a")).await;
    let mut cluster = ClusterClient::new(side.channel.clone());
    let r = cluster.member_list(pb::MemberListRequest::default()).await;
    let s = render(r, |r| {
        let learners: Vec<bool> = r.members.iter().map(|m| m.is_learner).collect();
        format!(
            "Members {} {} learners={learners:?}",
            header(&r.header),
            r.members.len()
        )
    });
    side.record("member list", s);
}

/// Keys and values that are not UTF-8 (python-etcd3's lock value is a binary uuid):
/// stored, read, ranged by a prefix ending in 0xff, compared and deleted byte for byte.
pub(super) async fn binary(side: &mut Side) {
    let uuid: Vec<u8> = vec![0x9f, 0x00, 0xc3, 0x28, 0xff, 0x80, 0x11, 0xee];
    let keys: [&[u8]; 4] = [
        b"bin/\xff",
        b"bin/\xff\x00",
        b"bin/\xfe\xff",
        b"bin/\xc3\xa9",
    ];
    for (i, key) in keys.iter().enumerate() {
        let p = pb::PutRequest {
            key: key.to_vec(),
            value: uuid.clone(),
            prev_kv: true,
            ..Default::default()
        };
        side.put(&format!("binary put {i}"), p).await;
    }
    let one = pb::RangeRequest {
        key: keys[0].to_vec(),
        ..Default::default()
    };
    side.range("binary get", one).await;
    for (label, pfx) in [
        ("bin/", &b"bin/"[..]),
        ("bin/\\xff", b"bin/\xff"),
        ("bin/\\xfe\\xff", b"bin/\xfe\xff"),
    ] {
        let mut end = pfx.to_vec();
        while end.last() == Some(&0xff) {
            end.pop();
        }
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let r = pb::RangeRequest {
            key: pfx.to_vec(),
            range_end: end,
            ..Default::default()
        };
        side.range(&format!("binary prefix {label}"), r).await;
    }
    let by_value = pb::RangeRequest {
        key: b"bin/".to_vec(),
        range_end: b"bin0".to_vec(),
        sort_order: SortOrder::Descend as i32,
        sort_target: SortTarget::Key as i32,
        ..Default::default()
    };
    side.range("binary keys descending", by_value).await;
    for (label, value) in [("same", uuid.clone()), ("other", vec![0x9f, 0x00])] {
        let c = pb::Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Value as i32,
            key: keys[1].to_vec(),
            target_union: Some(TargetUnion::Value(value)),
            ..Default::default()
        };
        let t = pb::TxnRequest {
            compare: vec![c],
            success: vec![op_del(pb::DeleteRangeRequest {
                key: keys[1].to_vec(),
                prev_kv: true,
                ..Default::default()
            })],
            failure: vec![],
        };
        side.txn(&format!("binary compare value {label}"), t).await;
    }
    let rest = pb::DeleteRangeRequest {
        key: b"bin/".to_vec(),
        range_end: b"bin0".to_vec(),
        prev_kv: true,
    };
    side.delete("binary delete the rest", rest).await;
}

/// Odds and ends: server-chosen lease ids, progress requests, a watch to the end of the
/// keyspace, `keys_only` with a value sort, more malformed requests, `Status`.
pub(super) async fn extras(side: &mut Side) {
    let resp = side
        .lease
        .lease_grant(pb::LeaseGrantRequest { ttl: 30, id: 0 })
        .await;
    let chosen = resp.as_ref().map_or(0, |r| r.get_ref().id);
    let s = render(resp, |r| {
        format!(
            "Grant {} id chosen={} ttl={} error={:?}",
            header(&r.header),
            r.id > 0,
            r.ttl,
            r.error
        )
    });
    side.record("extras: grant with a server-chosen id", s);
    side.put("extras: put under it", put_lease("y/a", "1", chosen))
        .await;
    let t = pb::TxnRequest {
        compare: vec![cmp(
            "y/a",
            CompareResult::Equal,
            CompareTarget::Lease,
            TargetUnion::Lease(chosen),
        )],
        success: vec![op_put(pb::PutRequest {
            prev_kv: true,
            ignore_lease: true,
            ..put("y/a", "2")
        })],
        failure: vec![],
    };
    let r = side.kv.txn(t).await;
    let s = render(r, |r| txn_str(r).replace(&chosen.to_string(), "<chosen>"));
    side.record("extras: compare the lease, keep it", s);
    side.revoke("extras: revoke it", chosen).await;
    side.range("extras: y/ after", prefix("y/")).await;
    for (k, v) in [("y/b", "3"), ("y/c", "1"), ("y/d", "2")] {
        side.put(&format!("extras: put {k}"), put(k, v)).await;
    }
    for (on, o) in [
        ("ascend", SortOrder::Ascend),
        ("descend", SortOrder::Descend),
    ] {
        let r = pb::RangeRequest {
            keys_only: true,
            sort_target: SortTarget::Value as i32,
            sort_order: o as i32,
            ..prefix("y/")
        };
        side.range(&format!("extras: keys_only by value {on}"), r)
            .await;
    }
    side.range(
        "extras: an empty key with a range end",
        pb::RangeRequest {
            key: Vec::new(),
            range_end: b"z".to_vec(),
            ..Default::default()
        },
    )
    .await;
    side.txn(
        "extras: a compare of an empty key",
        pb::TxnRequest {
            compare: vec![cmp(
                "",
                CompareResult::Equal,
                CompareTarget::Version,
                TargetUnion::Version(0),
            )],
            success: vec![],
            failure: vec![],
        },
    )
    .await;
    let mut w = side
        .watch(
            "extras: watch y/c to the end",
            watch_create(b"y/c", &[0], 0),
        )
        .await;
    let progress = pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::ProgressRequest(
            pb::WatchProgressRequest {},
        )),
    };
    side.watch_send(&mut w, "extras: progress", progress, 1)
        .await;
    side.delete(
        "extras: delete from y/b to the end",
        pb::DeleteRangeRequest {
            key: b"y/b".to_vec(),
            range_end: vec![0],
            prev_kv: true,
        },
    )
    .await;
    side.watch_responses(&mut w, "extras: its events", 1, Duration::from_secs(3))
        .await;
    drop(w);
    let mut k = side.keep_alive_open("extras: keep-alive lease 0", 0).await;
    side.keep_alive(&mut k, "extras: keep-alive a negative id", -7)
        .await;
    drop(k);
    let mut m = pb::maintenance_client::MaintenanceClient::new(side.channel.clone());
    let r = m.status(pb::StatusRequest {}).await;
    let s = render(r, |r| {
        let me = r.header.as_ref().map_or(0, |h| h.member_id);
        format!(
            "Status {} version={} leader is self={} learner={} errors={:?}",
            header(&r.header),
            r.version,
            r.leader == me,
            r.is_learner,
            r.errors
        )
    });
    side.record("extras: status", s);
}
