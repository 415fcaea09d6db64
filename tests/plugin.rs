//! The plug-in shape, used from outside the crate: a toy lock family written in this one
//! file — parameters, a server on the shared transport, a client — runs through the same
//! scenario parser, deployment, nemesis and checks as the real families. Adding a family
//! to locksim itself is this file's `impl Algorithm` in a folder of `src/locks/` plus one
//! line in `ALGORITHMS`.

use locksim::locks::{
    Algorithm, Family, Grant, LocalBoxFuture, LockClient, LockError, ParamDoc, Wait,
};
use locksim::net::{encode_frame, serve, Frames, Remote};
use locksim::sim::NodeCtx;
use locksim::{check_run, run, Scenario, Verdict};
use serde::Deserialize;
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

/// `algorithm = "toy"`: one server `toy-0` granting a lease on its wall clock with a
/// counter as the fencing token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Toy {
    #[serde(default = "ttl")]
    ttl_ms: u64,
}

fn ttl() -> u64 {
    500
}

const PORT: u16 = 9000;

impl Algorithm for Toy {
    const NAME: &'static str = "toy";
    const ABOUT: &'static str = "a one-server lease lock with a counter token";

    fn params() -> Vec<ParamDoc> {
        vec![ParamDoc::new("ttl_ms", "500", "lease time")]
    }

    fn servers(&self) -> Vec<String> {
        vec!["toy-0".into()]
    }

    fn fencing_token(&self) -> Option<&'static str> {
        Some("the server's lock counter")
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        let ttl = self.ttl_ms as i64;
        // (holder, lease end on the server's wall clock, last token)
        let state = Rc::new(RefCell::new((String::new(), 0i64, 0u64)));
        Box::pin(serve(ctx, PORT, Frames, move |ctx, req, out| {
            let reply = match req.map(|r| String::from_utf8_lossy(&r).into_owned()) {
                Ok(r) => {
                    let mut s = state.borrow_mut();
                    let now = ctx.wall_ms();
                    match r.split_once(' ') {
                        Some(("LOCK", who)) if s.0.is_empty() || s.1 <= now => {
                            s.2 += 1;
                            *s = (who.to_string(), now + ttl, s.2);
                            format!("OK {}", s.2)
                        }
                        Some(("UNLOCK", who)) if s.0 == who && s.1 > now => {
                            s.0.clear();
                            "OK 0".into()
                        }
                        _ => "NO".into(),
                    }
                }
                Err(e) => format!("ERR {e}"),
            };
            encode_frame(reply.as_bytes(), out);
        }))
    }

    fn client(&self) -> Box<dyn LockClient> {
        Box::new(ToyClient {
            remote: Remote::new("toy-0", PORT, Duration::from_millis(100), Frames),
            ttl_ms: self.ttl_ms,
            me: String::new(),
        })
    }

    fn lease_ms(&self) -> Option<u64> {
        Some(self.ttl_ms)
    }
}

struct ToyClient {
    remote: Remote<Frames>,
    ttl_ms: u64,
    me: String,
}

impl ToyClient {
    async fn say(&mut self, ctx: &NodeCtx, line: String) -> Result<String, LockError> {
        let mut out = Vec::new();
        encode_frame(line.as_bytes(), &mut out);
        match self.remote.request(ctx, &out).await {
            Ok(r) => Ok(String::from_utf8_lossy(&r).into_owned()),
            Err(e) if e.maybe_applied() => Err(LockError::Indeterminate(e.to_string())),
            Err(e) => Err(LockError::Failed(e.to_string())),
        }
    }
}

impl LockClient for ToyClient {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(async move {
            self.me = format!("{}:{}", ctx.name(), ctx.rand_u64());
            let deadline = wait.deadline_ns(ctx);
            loop {
                let start = ctx.mono_ns();
                let reply = self.say(ctx, format!("LOCK {}", self.me)).await?;
                if let Some(t) = reply.strip_prefix("OK ") {
                    let until = start + (self.ttl_ms as i64 - 10) * 1_000_000;
                    return Ok(Grant {
                        lock: lock.to_string(),
                        token: t.parse().ok(),
                        owner_value: self.me.clone(),
                        valid_until: Some(Rc::new(Cell::new(until))),
                    });
                }
                if ctx.mono_ns() >= deadline {
                    return Err(LockError::Failed("busy".into()));
                }
                ctx.sleep(Duration::from_millis(20)).await;
            }
        })
    }

    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            let reply = self
                .say(ctx, format!("UNLOCK {}", grant.owner_value))
                .await?;
            Ok(reply.starts_with("OK"))
        })
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        _lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            let reply = self.say(ctx, format!("UNLOCK {}", self.me)).await?;
            Ok(reply.starts_with("OK"))
        })
    }
}

const FAMILIES: &[Family] = &[Family::of::<Toy>()];

fn scenario(extra: &str) -> Scenario {
    let text = format!(
        "name = \"toy\"\nalgorithm = \"toy\"\nduration_ms = 6000\n[lock]\nttl_ms = 500\n{extra}"
    );
    Scenario::parse_with(Path::new("toy.toml"), &text, FAMILIES).unwrap_or_else(|e| panic!("{e}"))
}

fn verdict(s: &Scenario, seed: u64, check: &str) -> Verdict {
    let r = run(s, seed);
    assert!(r.error.is_none(), "{:?}", r.error);
    check_run(s, &r)
        .into_iter()
        .find(|c| c.name == check)
        .unwrap_or_else(|| panic!("no check {check}"))
        .verdict
}

#[test]
fn a_toy_family_runs_through_the_whole_harness() {
    let s = scenario("");
    assert_eq!(
        s.nodes(),
        ["toy-0", "storage", "client-0", "client-1", "client-2"]
    );
    for check in ["mutex", "token-order", "fencing", "counter", "liveness"] {
        assert_eq!(verdict(&s, 1, check), Verdict::Holds, "{check}");
    }
    // Its own keys are checked like any family's.
    let e = Scenario::parse_with(
        Path::new("toy.toml"),
        "name = \"t\"\nalgorithm = \"toy\"\nduration_ms = 100\n[lock]\nttl = 5\n",
        FAMILIES,
    )
    .unwrap_err();
    assert!(e.message().contains("unknown field `ttl`"), "{e}");
}

#[test]
fn the_toy_lease_breaks_under_a_pause_and_its_token_saves_the_counter() {
    let s = scenario(
        "[[faults.at]]\nat_ms = 1000\nkind = \"pause\"\nnodes = [\"client-0\"]\nduration_ms = 1500\nat = \"before-write\"\n",
    );
    let violated = (0..10).any(|seed| verdict(&s, seed, "mutex") == Verdict::Violated);
    assert!(
        violated,
        "a pause past the lease must break mutual exclusion"
    );
    for seed in 0..10 {
        assert_eq!(verdict(&s, seed, "counter"), Verdict::Holds, "seed {seed}");
    }
}
