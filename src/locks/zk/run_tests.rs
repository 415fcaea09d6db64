//! Whole runs of the family through the harness: sessions as the server and the client
//! see them, and the recipe's behaviour, read back from the history.

use crate::check::{COUNTER, FENCING, LIVENESS, LOCK_LINEARIZABLE, MUTEX, TOKEN_ORDER};
use crate::history::{Event, EventType};
use crate::scenario::Scenario;
use crate::{check_run, run, Verdict};
use std::path::Path;

fn scenario(body: &str) -> Scenario {
    let text = format!("name = \"t\"\nalgorithm = \"zk\"\n{body}");
    Scenario::parse(Path::new("t.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

fn states<'a>(h: &'a [Event], node: &str) -> Vec<(&'a str, f64, &'a str)> {
    h.iter()
        .filter(|e| e.process == node && e.f == "connection")
        .map(|e| {
            (
                e.value.as_ref().and_then(|v| v.as_str()).unwrap_or(""),
                e.time_ms(),
                e.reason.as_deref().unwrap_or(""),
            )
        })
        .collect()
}

#[test]
fn a_paused_holders_session_expires_on_the_server_and_it_learns_so_on_reconnecting() {
    let s = scenario(
        "duration_ms = 4000\n[workload]\nclients = 2\n[[faults.at]]\nat_ms = 300\nkind = \"pause\"\nnodes = [\"client-0\"]\nduration_ms = 1500\nat = \"after-acquire\"\n",
    );
    for seed in 0..3 {
        let r = run(&s, seed);
        let h = &r.history;
        let pause = h.iter().find(|e| e.f == "pause").expect("the pause struck");
        let resume = h.iter().find(|e| e.f == "resume").unwrap();
        // The server expired the holder's session while it was frozen, by its own clock:
        // between T and T + tick after the last request it heard.
        let expire = h
            .iter()
            .find(|e| e.process == "zk-0" && e.f == "expire")
            .expect("an expire");
        assert!(expire.time_ns > pause.time_ns && expire.time_ns < resume.time_ns);
        let gap = expire.time_ns - pause.time_ns;
        assert!(
            gap <= 1_110_000_000,
            "seed {seed}: expired {gap} ns after the pause"
        );
        // The waiter was granted right after.
        let grant = h
            .iter()
            .find(|e| {
                e.process == "client-1"
                    && e.kind == EventType::Ok
                    && e.f == "acquire"
                    && e.time_ns > expire.time_ns
            })
            .unwrap();
        assert!(grant.time_ns - expire.time_ns < 50_000_000);
        // The holder: SUSPENDED on waking (no reply for longer than the read timeout),
        // LOST when the server says the session expired, then a new session.
        let st = states(h, "client-0");
        let after: Vec<&str> = st
            .iter()
            .filter(|(_, t, _)| *t * 1e6 >= resume.time_ns as f64)
            .map(|(s, _, _)| *s)
            .collect();
        assert_eq!(
            after,
            ["SUSPENDED", "LOST", "RECONNECTED"],
            "seed {seed}: {st:?}"
        );
        let lost = st.iter().find(|(s, _, _)| *s == "LOST").unwrap();
        assert!(lost.2.contains("expired"), "{lost:?}");
        assert!(st.last().unwrap().2.contains("new session"));
        assert_eq!(check_run(&s, &r).verdict(&MUTEX), Verdict::Violated);
        assert_eq!(
            check_run(&s, &r).verdict(&LOCK_LINEARIZABLE),
            Verdict::Holds
        );
    }
}

#[test]
fn a_partitioned_clients_session_expires_and_curator_declares_it_lost_on_its_own() {
    let s = scenario(
        "duration_ms = 5000\n[workload]\nclients = 2\n[[faults.at]]\nat_ms = 500\nkind = \"partition\"\nnodes = [\"client-0\"]\npeers = [\"zk-0\"]\nduration_ms = 2500\n",
    );
    let r = run(&s, 1);
    let st = states(&r.history, "client-0");
    let names: Vec<&str> = st.iter().map(|(s, _, _)| *s).collect();
    assert_eq!(
        names,
        ["CONNECTED", "SUSPENDED", "LOST", "RECONNECTED"],
        "{st:?}"
    );
    let (suspended, lost) = (st[1].1, st[2].1);
    // SUSPENDED 2/3 of the timeout after the last reply (before 500 + 667 ms), LOST a
    // whole session timeout later, injected by Curator while still cut off.
    assert!(suspended > 500.0 && suspended <= 1168.0, "{st:?}");
    assert!((lost - suspended - 1000.0).abs() < 2.0, "{st:?}");
    assert!(st[2].2.contains("injecting"), "{st:?}");
    // The server expired it too, on its own, before the client gave up.
    let server_expired = r
        .history
        .iter()
        .any(|e| e.process == "zk-0" && e.f == "expire");
    let client0_held = r.history.iter().any(|e| {
        e.process == "client-0"
            && e.kind == EventType::Ok
            && e.f == "acquire"
            && e.time_ms() < 500.0
    });
    assert_eq!(
        server_expired, client0_held,
        "an expire only if client-0 owned the lock"
    );
    assert!(st[3].2.contains("new session") && st[3].1 > 3000.0);
}

#[test]
fn a_waiter_is_granted_when_its_predecessor_goes_and_not_before() {
    let s = scenario("duration_ms = 3000\n[workload]\nclients = 3\n");
    for seed in 0..4 {
        let r = run(&s, seed);
        let h = &r.history;
        let holds = crate::check::hold_intervals(h, r.end_ns);
        assert!(holds.len() > 20, "seed {seed}: {} holds", holds.len());
        let mut holds: Vec<_> = holds.into_iter().collect();
        holds.sort_by_key(|x| x.start_ns);
        for w in holds.windows(2) {
            let (prev, next) = (&w[0], &w[1]);
            assert!(
                next.start_ns >= prev.end_ns,
                "seed {seed}: overlap {prev:?} {next:?}"
            );
            // Watch-driven: a delete, a notification, a getChildren: a few latencies.
            if next.process != prev.process {
                assert!(
                    next.start_ns - prev.end_ns < 60_000_000,
                    "seed {seed}: {prev:?} then {next:?}"
                );
            }
            assert!(next.token > prev.token, "czxid tokens increase");
        }
        // What the lock promises; `fair` (a quality check) judges the clients' invoke
        // order, which the first acquires, still opening sessions, do not keep.
        let promised = check_run(&s, &r);
        for c in promised.iter().filter(|c| c.kind.counts_as_violation()) {
            assert_eq!(
                c.verdict,
                Verdict::Holds,
                "seed {seed}: {} {:?}",
                c.name,
                c.violations
            );
        }
    }
}

#[test]
fn the_server_clamps_the_session_timeout_to_its_ticks() {
    let s = scenario("duration_ms = 500\n[lock]\ntick_ms = 100\nsession_timeout_ms = 50\n[workload]\nclients = 1\n");
    let r = run(&s, 0);
    let st = states(&r.history, "client-0");
    assert!(st[0].2.ends_with("timeout 200 ms"), "{st:?}");
}

#[test]
fn a_restarted_standalone_server_keeps_its_sessions_and_their_nodes() {
    let s = scenario(
        "duration_ms = 4000\n[workload]\nclients = 3\n[[faults.at]]\nat_ms = 1000\nkind = \"crash\"\nnodes = [\"zk-0\"]\ndown_ms = 300\n",
    );
    for seed in 0..3 {
        let r = run(&s, seed);
        let h = &r.history;
        assert!(
            !h.iter().any(|e| e.process == "zk-0" && e.f == "expire"),
            "seed {seed}"
        );
        for c in ["client-0", "client-1", "client-2"] {
            let st = states(h, c);
            assert!(
                st.iter().all(|(s, _, why)| *s != "LOST"
                    && (*s == "CONNECTED" || !why.contains("new session"))),
                "seed {seed} {c}: {st:?}"
            );
        }
        for check in [&MUTEX, &LIVENESS, &LOCK_LINEARIZABLE, &COUNTER] {
            assert_eq!(
                check_run(&s, &r).verdict(check),
                Verdict::Holds,
                "seed {seed} {check:?}"
            );
        }
    }
}

/// A standalone server whose disk stalls for 2.5 session timeouts: its writes wait for
/// the fsync, but it goes on reading requests, and the pings and reconnections of its
/// clients touch their sessions meanwhile (ZooKeeper's connection threads and
/// `submitRequest`): no session expires, no client loses its session.
#[test]
fn a_standalone_servers_stalled_disk_holds_its_writes_but_not_its_sessions() {
    let s = scenario(
        "duration_ms = 6000\n[workload]\nclients = 2\n[[faults.at]]\nat_ms = 1500\nkind = \"disk-stall\"\nnodes = [\"zk-0\"]\nduration_ms = 2500\n",
    );
    for seed in 0..3 {
        let r = run(&s, seed);
        let h = &r.history;
        assert!(
            h.iter().any(|e| e.f == "disk-stall"),
            "seed {seed}: no stall"
        );
        assert!(
            !h.iter().any(|e| e.f == "expire"),
            "seed {seed}: a session expired"
        );
        for c in ["client-0", "client-1"] {
            let st = states(h, c);
            assert!(
                !st.iter().any(|(s, _, _)| *s == "LOST"),
                "seed {seed}: {c} lost its session: {st:?}"
            );
        }
        // Nothing was granted while the log could not be written.
        assert!(
            !h.iter().any(|e| e.kind == EventType::Ok
                && e.f == "acquire"
                && e.time_ms() > 1510.0
                && e.time_ms() < 4000.0),
            "seed {seed}: granted during the stall"
        );
        assert_eq!(
            check_run(&s, &r).verdict(&MUTEX),
            Verdict::Holds,
            "seed {seed}"
        );
    }
}

mod ensemble {
    use super::*;
    use crate::locks::zk::curator::CuratorFramework;
    use crate::locks::zk::proto::{Request, Response};
    use crate::locks::zk::tree::CreateMode;
    use crate::locks::zk::ZkParams;
    use crate::sim::{FaultPlan, Host, Network, World};
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    use std::time::Duration;

    fn params() -> ZkParams {
        ZkParams {
            servers: 3,
            ..ZkParams::default()
        }
    }

    /// Three servers and two test clients: a writer that creates `/n<i>` nodes one after
    /// another and announces each once acknowledged, and a reader that then looks for it
    /// (with or without `sync` first). Returns (reads, stale reads, own writes unseen).
    fn reads_after_writes(seed: u64, sync: bool) -> (u32, u32, u32) {
        let p = params();
        let announced: Rc<Cell<u32>> = Rc::default();
        let out: Rc<RefCell<(u32, u32, u32)>> = Rc::default();
        let mut hosts: Vec<Host> = (0..3)
            .map(|i| {
                let p = p.clone();
                Host::new(format!("zk-{i}"), move |ctx| {
                    Box::pin(crate::locks::zk::server::server_main(ctx, p.clone()))
                })
            })
            .collect();
        let (p1, a1, o1) = (p.clone(), announced.clone(), out.clone());
        hosts.push(Host::new("writer", move |ctx| {
            let (p, announced, out) = (p1.clone(), a1.clone(), o1.clone());
            Box::pin(async move {
                let c = CuratorFramework::new(p);
                c.start(&ctx);
                for i in 1.. {
                    if !c.wait_connected(&ctx, Duration::from_secs(5)).await {
                        continue;
                    }
                    let path = format!("/n{i}");
                    let created = c
                        .call(
                            Request::Create {
                                path: path.clone(),
                                data: vec![],
                                mode: CreateMode::Persistent,
                                with_stat: true,
                            },
                            None,
                        )
                        .await;
                    if created.is_err() {
                        return;
                    }
                    // Its own write is visible to it at once, wherever it is connected.
                    let seen = c.call(Request::Exists { path, watch: false }, None).await;
                    if !matches!(seen, Ok(Response::Exists { stat: Some(_) })) {
                        out.borrow_mut().2 += 1;
                    }
                    announced.set(i);
                    ctx.sleep(Duration::from_millis(20)).await;
                }
            })
        }));
        let (p2, a2, o2) = (p.clone(), announced.clone(), out.clone());
        hosts.push(Host::new("reader", move |ctx| {
            let (p, announced, out) = (p2.clone(), a2.clone(), o2.clone());
            Box::pin(async move {
                let c = CuratorFramework::new(p);
                c.start(&ctx);
                let mut last = 0;
                loop {
                    ctx.sleep(Duration::from_millis(1)).await;
                    let i = announced.get();
                    if i == last || !c.is_connected() {
                        continue;
                    }
                    last = i;
                    if sync
                        && c.call(Request::Sync { path: "/".into() }, None)
                            .await
                            .is_err()
                    {
                        continue;
                    }
                    let path = format!("/n{i}");
                    let r = c.call(Request::Exists { path, watch: false }, None).await;
                    let mut o = out.borrow_mut();
                    match r {
                        Ok(Response::Exists { stat: Some(_) }) => o.0 += 1,
                        Ok(Response::Exists { stat: None }) => {
                            o.0 += 1;
                            o.1 += 1;
                        }
                        _ => {}
                    }
                }
            })
        }));
        let world = World {
            duration_ms: 3000,
            network: Network {
                latency_ms: [1, 10],
                loss: 0.0,
            },
            hosts,
            faults: FaultPlan::Fixed(vec![]),
            progress: None,
        };
        let r = crate::sim::run(world, seed);
        assert!(r.error.is_none(), "{:?}", r.error);
        let o = *out.borrow();
        o
    }

    #[test]
    fn reads_are_sequentially_consistent_and_sync_catches_up() {
        let (mut stale_without, mut reads_without) = (0, 0);
        for seed in 0..4 {
            let (reads, stale, unseen) = reads_after_writes(seed, true);
            assert!(reads > 20, "seed {seed}: {reads} reads");
            assert_eq!(
                stale, 0,
                "seed {seed}: a read after sync missed a committed write"
            );
            assert_eq!(unseen, 0, "seed {seed}: a client missed its own write");
            let (reads, stale, unseen) = reads_after_writes(seed, false);
            assert_eq!(unseen, 0);
            reads_without += reads;
            stale_without += stale;
        }
        // Without sync a follower may answer before it has applied the write (ZooKeeper's
        // sequential consistency); the reader sees it late, never out of order.
        assert!(reads_without > 80);
        assert!(stale_without < reads_without);
    }

    #[test]
    fn a_session_survives_the_loss_of_its_server_by_moving_to_another() {
        let s = scenario("duration_ms = 5000\n[lock]\nservers = 3\n[workload]\nclients = 3\n");
        // Find the leader of a fault-free run, then crash it at 1500 ms in the same run.
        let first = run(&s, 2);
        let leader = first
            .history
            .iter()
            .rfind(|e| e.f == "leader" && e.time_ms() < 1500.0)
            .map(|e| e.process.clone())
            .expect("a leader");
        let schedule = vec![crate::TimedFault {
            at_ms: 1500,
            fault: crate::Fault::Crash {
                nodes: vec![leader.clone()],
                down_ms: Some(500),
                at: crate::FaultPoint::Anywhere,
            },
        }];
        let r = crate::run_with_schedule(&s, 2, schedule);
        let h = &r.history;
        let new_leader = h
            .iter()
            .find(|e| e.f == "leader" && e.time_ms() > 1500.0)
            .expect("a new leader");
        assert_ne!(new_leader.process, leader);
        assert!(new_leader.time_ms() < 2200.0, "{new_leader:?}");
        for c in ["client-0", "client-1", "client-2"] {
            let st = states(h, c);
            assert!(
                !st.iter().any(|(s, _, _)| *s == "LOST"),
                "{c} lost its session: {st:?}"
            );
        }
        for check in [
            &MUTEX,
            &LIVENESS,
            &LOCK_LINEARIZABLE,
            &COUNTER,
            &TOKEN_ORDER,
        ] {
            assert_eq!(
                check_run(&s, &r).verdict(check),
                Verdict::Holds,
                "{check:?}"
            );
        }
    }
    /// What a pipelining client learns when it comes back: whether its session outlived a
    /// write stuck behind its server's stalled disk while it kept pinging.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Back {
        NeverConnected,
        Alive,
        Expired,
    }

    /// A raw client on zk-0 opens a session at 1 s and pings; zk-0's disk stalls from
    /// 2 s to 5 s. At 2.1 s the client sends a create (stuck: zk-0 cannot log it), then pings every
    /// third of the timeout without waiting for answers, as ZooKeeper's clients do. At
    /// 1.5 timeouts after the create it reconnects through zk-1 and is told whether its
    /// session is alive. Returns that, and the run's leader events (process, ms).
    fn pings_behind_a_stuck_write(seed: u64) -> (Back, Vec<(String, f64)>) {
        use crate::locks::zk::proto::{
            decode_reply, encode_request, ClientFrame, ServerFrame, CLIENT_PORT, PASSWD_LEN,
            PING_XID,
        };
        use crate::net::{Conn, Frames};
        const T: u64 = 1000;
        let p = params();
        let back = Rc::new(Cell::new(Back::NeverConnected));
        let mut hosts: Vec<Host> = (0..3)
            .map(|i| {
                let p = p.clone();
                Host::new(format!("zk-{i}"), move |ctx| {
                    Box::pin(crate::locks::zk::server::server_main(ctx, p.clone()))
                })
            })
            .collect();
        let b = back.clone();
        hosts.push(Host::new("raw", move |ctx| {
            let back = b.clone();
            Box::pin(async move {
                let send = |req: Request, xid: i32| {
                    let mut out = Vec::new();
                    encode_request(&ClientFrame { xid, req }, &mut out);
                    out
                };
                let open = |server: &'static str, session: u64, passwd: Vec<u8>| {
                    let ctx = ctx.clone();
                    async move {
                        let d = Duration::from_millis(200);
                        let s = crate::net::tcp::connect(&ctx, server, CLIENT_PORT, d).await;
                        let mut conn = Conn::new(s.ok()?.ok()?, Frames);
                        let hello = Request::Connect {
                            session,
                            timeout_ms: T,
                            last_zxid: 0,
                            passwd,
                        };
                        conn.send(&send(hello, 0)).await.ok()?;
                        let reply = ctx.timeout(d, conn.recv()).await.ok()?.ok()?;
                        match decode_reply(&reply, true, |_| None).ok()? {
                            ServerFrame::Reply { resp, .. } => Some((conn, resp)),
                            ServerFrame::Watch(_) => None,
                        }
                    }
                };
                ctx.sleep(Duration::from_millis(1000)).await;
                let (mut conn, session, passwd) = loop {
                    let hello = open("zk-0", 0, vec![0; PASSWD_LEN]).await;
                    if let Some((
                        c,
                        Response::Connected {
                            session, passwd, ..
                        },
                    )) = hello
                    {
                        break (c, session, passwd);
                    }
                    ctx.sleep(Duration::from_millis(50)).await;
                };
                let started = ctx.mono_ns();
                let at = |ms: u64| {
                    let wait = (ms as i64 * 1_000_000 + 1_000_000_000 - ctx.mono_ns()).max(0);
                    ctx.sleep(Duration::from_nanos(wait as u64))
                };
                assert!(started < 1_700_000_000, "connected late");
                // Idle until the stall, pinging as a client does.
                for ms in [700, 1000] {
                    at(ms).await;
                    let _ = conn.send(&send(Request::Ping, PING_XID)).await;
                }
                at(1100).await;
                let create = Request::Create {
                    path: "/slow".into(),
                    data: vec![],
                    mode: CreateMode::Persistent,
                    with_stat: true,
                };
                let _ = conn.send(&send(create, 1)).await;
                for k in 1..=3 {
                    at(1100 + k * T / 3).await;
                    let _ = conn.send(&send(Request::Ping, PING_XID)).await;
                }
                at(1100 + T * 3 / 2).await;
                back.set(match open("zk-1", session, passwd).await {
                    Some((_, Response::Connected { .. })) => Back::Alive,
                    Some((_, Response::Expired)) => Back::Expired,
                    _ => Back::NeverConnected,
                });
            })
        }));
        let world = World {
            duration_ms: 4000,
            network: Network {
                latency_ms: [1, 10],
                loss: 0.0,
            },
            hosts,
            faults: FaultPlan::Fixed(vec![crate::TimedFault {
                at_ms: 2000,
                fault: crate::Fault::DiskStall {
                    nodes: vec!["zk-0".into()],
                    duration_ms: 3000,
                },
            }]),
            progress: None,
        };
        let r = crate::sim::run(world, seed);
        assert!(r.error.is_none(), "{:?}", r.error);
        let leaders = r
            .history
            .iter()
            .filter(|e| e.f == "leader")
            .map(|e| (e.process.clone(), e.time_ms()))
            .collect();
        (back.get(), leaders)
    }

    /// ZooKeeper touches a session as each request arrives (`submitRequest`), so pings
    /// queued behind a write that waits for a stalled disk keep the session alive. Read
    /// one at a time, they would count only once the write was answered: here never,
    /// and the leader would expire the session a timeout after the create.
    #[test]
    fn pings_queued_behind_a_stuck_write_keep_the_session_alive() {
        let mut checked = 0;
        for seed in 0..8 {
            let (back, leaders) = pings_behind_a_stuck_write(seed);
            // Only runs where zk-0 follows one leader throughout: a stalled leader would
            // be replaced, and a new leader starts every session over.
            if leaders.len() != 1 || leaders[0].0 == "zk-0" {
                continue;
            }
            assert_eq!(back, Back::Alive, "seed {seed}, leaders {leaders:?}");
            checked += 1;
        }
        assert!(
            checked >= 2,
            "only {checked} runs had zk-0 follow one leader"
        );
    }

    /// The guarantees-matrix cell `zk--all--fenced`, seed 12. client-0's reconnection
    /// through zk-0 at 5671 ms puts a SetOwner in zk-0's log (it still led term 3, with
    /// no quorum) and times out; client-0 reconnects through zk-2 at 6055 ms, which
    /// believes it already owns the session; the new leader (zk-0, term 4) then commits
    /// the stale SetOwner. Every write of client-0 through zk-2 fails SessionMoved from
    /// then on — its guaranteed delete of the released lock node included — while its
    /// pings keep the session, and so the node, alive: no client acquires again. As in
    /// ZooKeeper (FinalRequestProcessor, ZOOKEEPER-710), a SessionMoved closes the
    /// connection: the client reconnects and its revalidation moves the session back.
    #[test]
    fn a_write_that_finds_its_session_moved_closes_the_connection_so_the_client_moves_it_back() {
        let s = scenario(
            "duration_ms = 10000\nliveness_ms = 4000\n\
             [faults]\ninterval_ms = [300, 1500]\nswarm = true\n\
             [faults.clock]\ndrift_ppm = [-20000, 20000]\njump_ms = [-2000, 2000]\nnodes = \"all\"\nskew_ms = [-2000, 2000]\n\
             [faults.crash]\ndown_ms = [0, 1500]\nnodes = \"servers\"\n\
             [faults.partition]\nduration_ms = [100, 2000]\nnodes = \"all\"\n\
             [faults.pause]\nat = \"before-write\"\nduration_ms = [500, 3000]\nnodes = \"clients\"\n\
             [lock]\nservers = 3\nsession_timeout_ms = 1000\n\
             [workload]\nclients = 3\nfencing = true\n",
        );
        let r = run(&s, 12);
        let h = &r.history;
        let moved: Vec<&Event> = h
            .iter()
            .filter(|e| {
                e.process.starts_with("client-")
                    && e.reason
                        .as_deref()
                        .is_some_and(|r| r.contains("Session moved"))
            })
            .collect();
        assert!(
            moved.is_empty(),
            "a client was answered SessionMoved: {:?}",
            moved.first()
        );
        // client-0 came back after the stale move and acquired again.
        assert!(
            h.iter().any(|e| e.process == "client-0"
                && e.kind == EventType::Ok
                && e.f == "acquire"
                && e.time_ms() > 6300.0),
            "client-0 never acquired after 6300 ms"
        );
        for check in [&LIVENESS, &LOCK_LINEARIZABLE, &TOKEN_ORDER, &FENCING] {
            assert_eq!(
                check_run(&s, &r).verdict(check),
                Verdict::Holds,
                "{check:?}"
            );
        }
    }
}

#[test]
fn a_waiter_whose_node_vanished_tries_again_inside_the_acquire_as_curator_does() {
    // client-0 holds for 3 s; client-1 waits behind it and is cut off past its session
    // timeout, so its node goes with its session. Back, it finds its node gone
    // ("Sequential path not found") and creates a new one within the same call.
    let s = scenario(
        "duration_ms = 5000\nliveness_ms = 5000\n[lock]\nsession_timeout_ms = 600\n\
         [workload]\nclients = 2\nthink_ms = [0, 0]\nwork_ms = [3000, 3000]\n\
         [[faults.at]]\nat_ms = 300\nkind = \"partition\"\nnodes = [\"client-1\"]\nduration_ms = 900\n",
    );
    let mut retried = 0;
    for seed in 0..4 {
        let r = run(&s, seed);
        let h = &r.history;
        let mine: Vec<&Event> = h
            .iter()
            .filter(|e| e.process == "client-1" && e.f != "connection")
            .collect();
        for (i, e) in mine.iter().enumerate() {
            let again = e.kind == EventType::Info
                && e.f == "acquire"
                && e.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("tries again"));
            if again {
                retried += 1;
                // The rest of the call is a new acquire, not the workload's abandon.
                let next = mine.get(i + 1).expect("the call goes on");
                assert_eq!((next.kind, next.f.as_str()), (EventType::Invoke, "acquire"));
            }
        }
        assert_eq!(
            check_run(&s, &r).verdict(&LOCK_LINEARIZABLE),
            Verdict::Holds
        );
        assert_eq!(check_run(&s, &r).verdict(&LIVENESS), Verdict::Holds);
    }
    assert!(retried > 0, "no waiter found its node gone");
}
