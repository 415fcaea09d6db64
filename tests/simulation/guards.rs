//! The determinism guards on deliberately bad lock clients: one that starts a task with
//! `tokio::spawn` (outside its node context: a pause does not freeze it) and one that
//! reads OS randomness. Each is caught with its node named; a well-behaved family and
//! locksim's own are not flagged.

use locksim::plugin::*;
use rand::Rng;
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// `algorithm = "bad"`: one server `bad-0` granting a lock while it is free; client-0's
/// lock client misbehaves as `misbehave` says.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bad {
    /// `none`, `spawn` or `os-random`.
    misbehave: String,
}

const PORT: u16 = 9000;

impl Algorithm for Bad {
    const NAME: &'static str = "bad";
    const ABOUT: &'static str = "a free-lock server; client-0 misbehaves";
    fn params() -> Vec<ParamDoc> {
        vec![ParamDoc::new(
            "misbehave",
            "none",
            "none, spawn or os-random",
        )]
    }
    fn servers(&self) -> Vec<String> {
        vec!["bad-0".into()]
    }
    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        let holder = std::rc::Rc::new(std::cell::RefCell::new(None::<Vec<u8>>));
        Box::pin(serve(ctx, PORT, Frames, move |_ctx, request, out| {
            let mut holder = holder.borrow_mut();
            let reply: &[u8] = match request {
                Ok(r) if r.starts_with(b"LOCK ") && holder.is_none() => {
                    *holder = Some(r[5..].to_vec());
                    b"OK"
                }
                Ok(r) if r.starts_with(b"UNLOCK ") && holder.as_deref() == Some(&r[7..]) => {
                    *holder = None;
                    b"OK"
                }
                _ => b"NO",
            };
            encode_frame(reply, out);
        }))
    }
    fn client(&self) -> Box<dyn LockClient> {
        let remote = Remote::new("bad-0", PORT, Duration::from_millis(100), Frames);
        Box::new(BadClient {
            remote,
            misbehave: self.misbehave.clone(),
            misbehaved: false,
        })
    }
    fn lease_ms(&self) -> Option<u64> {
        None
    }
    fn fencing_token(&self) -> Option<&'static str> {
        None
    }
}

struct BadClient {
    remote: Remote<Frames>,
    misbehave: String,
    /// Whether client-0 misbehaved already (once is enough).
    misbehaved: bool,
}

impl BadClient {
    async fn ask(&mut self, ctx: &NodeCtx, verb: &str, who: &str) -> Result<bool, LockError> {
        let mut out = Vec::new();
        encode_frame(format!("{verb} {who}").as_bytes(), &mut out);
        match self.remote.request(ctx, &out).await {
            Ok(reply) => Ok(reply == b"OK"),
            Err(e) if e.maybe_applied() => Err(LockError::Indeterminate(e.to_string())),
            Err(e) => Err(LockError::Failed(e.to_string())),
        }
    }

    /// What client-0 does wrong before each acquire; an error to return at once, if any.
    fn misbehave(&mut self, ctx: &NodeCtx) -> Option<LockError> {
        if ctx.name() != "client-0" || self.misbehaved {
            return None;
        }
        self.misbehaved = true;
        match self.misbehave.as_str() {
            // A library's background task, started outside the node context.
            "spawn" => {
                tokio::spawn(async {
                    loop {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                });
                None
            }
            // A library's request id drawn from the OS, not the node's seeded RNG, in
            // the error of a first attempt.
            "os-random" => {
                let id: u64 = rand::thread_rng().gen();
                Some(LockError::Failed(format!(
                    "request {id:016x}: busy, try again"
                )))
            }
            _ => None,
        }
    }
}

impl LockClient for BadClient {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(async move {
            if let Some(e) = self.misbehave(ctx) {
                return Err(e);
            }
            let deadline = wait.deadline_ns(ctx);
            while !self.ask(ctx, "LOCK", ctx.name()).await? {
                if wait.once() || ctx.mono_ns() >= deadline {
                    return Err(LockError::Failed(wait.gave_up("held")));
                }
                ctx.sleep(Duration::from_millis(20)).await;
            }
            let owner_value = ctx.name().to_string();
            Ok(Grant {
                lock: lock.to_string(),
                token: None,
                owner_value,
                valid_until: None,
            })
        })
    }
    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(self.ask(ctx, "UNLOCK", &grant.owner_value))
    }
    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        _lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(self.ask(ctx, "UNLOCK", ctx.name()))
    }
}

fn bad(misbehave: &str) -> Scenario {
    Scenario::builder("bad", "bad")
        .families(&[Family::of::<Bad>()])
        .duration_ms(2000)
        .lock_param("misbehave", misbehave)
        .build()
        .expect("valid scenario")
}

#[test]
fn a_well_behaved_client_passes() {
    assert_deterministic(&bad("none"), 3);
    assert!(run(&bad("none"), 3).escaped_tasks.is_empty());
}

#[test]
fn a_client_that_tokio_spawns_is_reported_with_its_node() {
    let result = run(&bad("spawn"), 3);
    let nodes: Vec<&String> = result.escaped_tasks.keys().collect();
    assert_eq!(nodes, ["client-0"], "{:?}", result.escaped_tasks);
    match check_determinism(&bad("spawn"), 3) {
        Err(e @ Nondeterminism::EscapedTasks(_)) => {
            assert!(e.to_string().contains("client-0"), "{e}")
        }
        other => panic!("expected escaped tasks, got {other:?}"),
    }
}

#[test]
fn a_client_that_reads_os_randomness_is_reported_with_its_node() {
    match check_determinism(&bad("os-random"), 3) {
        Err(Nondeterminism::Differs(d)) => {
            // Nothing else differs before client-0's failed first acquire.
            let nodes = [&d.first, &d.second].map(|e| e.as_ref().map(|e| e.process.as_str()));
            assert_eq!(nodes, [Some("client-0"); 2], "{d:?}");
            let msg = Nondeterminism::Differs(d).to_string();
            assert!(msg.contains("node client-0 in the first run"), "{msg}");
        }
        other => panic!("expected differing histories, got {other:?}"),
    }
}

/// locksim's own families start no task outside a node context.
#[test]
fn the_built_in_families_start_no_escaped_task() {
    for name in [
        "redis-baseline-fenced",
        "raft-baseline",
        "zk-baseline",
        "db-baseline",
    ] {
        let s = Scenario::load(Path::new(&format!("sims/{name}.toml"))).expect("valid");
        let r = run(&s, 1);
        assert!(r.escaped_tasks.is_empty(), "{name}: {:?}", r.escaped_tasks);
    }
}
