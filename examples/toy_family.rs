//! A lock family written outside locksim, with nothing but [`locksim::plugin`]: its
//! parameters, a server on the shared transport, a client, and a few seeds of it through
//! the same scenarios, nemesis and checks as locksim's own families.
//!
//! The toy is a one-server lease lock whose fencing token is a counter. A client paused
//! past its lease breaks mutual exclusion, and the token keeps the counter right anyway:
//! Kleppmann's argument, on a family of twenty lines.
//!
//! ```text
//! cargo run --release --example toy_family
//! ```
//!
//! It exits non-zero when a check's verdict is not the one expected (`cargo test` runs
//! the same expectations).

use locksim::plugin::*;
use serde::Deserialize;
use std::cell::{Cell, RefCell};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

/// `algorithm = "toy"`: one server `toy-0` granting a lease on its wall clock with a
/// counter as the fencing token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Toy {
    /// How long a grant lasts, ms of the server's wall clock.
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

    fn validate(&self) -> Result<(), ParamError> {
        param::positive("ttl_ms", self.ttl_ms)
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

/// One client node's connection to `toy-0`, and the value naming its current holder.
struct ToyClient {
    remote: Remote<Frames>,
    ttl_ms: u64,
    me: String,
}

impl ToyClient {
    /// One request line, its reply; a failed request says whether it may have run.
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
                    // The lease runs on the server's clock: trust it a little less.
                    let until = start + (self.ttl_ms as i64 - 10) * 1_000_000;
                    return Ok(Grant {
                        lock: lock.to_string(),
                        token: t.parse().ok(),
                        owner_value: self.me.clone(),
                        valid_until: Some(Rc::new(Cell::new(until))),
                    });
                }
                if wait.once() || ctx.mono_ns() >= deadline {
                    return Err(LockError::Failed(wait.gave_up("held")));
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

/// The algorithms these scenarios may name: the toy alone.
const FAMILIES: &[Family] = &[Family::of::<Toy>()];

/// A six-second toy scenario with three clients and a 500 ms lease.
fn toy(name: &str) -> ScenarioBuilder {
    Scenario::builder(name, Toy::NAME)
        .families(FAMILIES)
        .duration_ms(6000)
        .lock_param("ttl_ms", 500)
}

/// Every expectation of the toy; each one not met, described.
fn verify() -> Vec<String> {
    let mut unmet = Vec::new();
    let mut expect = |what: String, met: bool| {
        println!("{} {what}", if met { "ok  " } else { "FAIL" });
        if !met {
            unmet.push(what);
        }
    };

    // Without faults every standard check holds.
    let calm = toy("toy").build().unwrap_or_else(|e| panic!("{e}"));
    let nodes = calm.nodes();
    expect(
        format!("nodes {nodes:?}"),
        nodes == ["toy-0", "storage", "client-0", "client-1", "client-2"],
    );
    for seed in 0..3 {
        let result = run(&calm, seed);
        let reports = check_run(&calm, &result);
        for check in [&MUTEX, &TOKEN_ORDER, &FENCING, &COUNTER, &LIVENESS] {
            let verdict = reports.verdict(check);
            expect(
                format!("calm seed {seed}: {} {verdict:?}", check.name),
                result.error.is_none() && verdict == Verdict::Holds,
            );
        }
    }

    // Its own keys are checked like any family's.
    let typo = match toy("typo").lock_param("ttl", 5).build() {
        Ok(_) => "accepted".to_string(),
        Err(e) => e.to_string(),
    };
    expect(
        format!("a `ttl` key is refused: {typo}"),
        typo.contains("unknown field `ttl`"),
    );

    // A client paused past its lease breaks mutual exclusion on some seed; the fencing
    // token keeps the counter right on every one.
    let paused = toy("paused")
        .fault(
            1000,
            Fault::Pause {
                nodes: vec!["client-0".into()],
                duration_ms: 1500,
                at: FaultPoint::BeforeWrite,
            },
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut broken = Vec::new();
    for seed in 0..10 {
        let reports = check_run(&paused, &run(&paused, seed));
        if reports.verdict(&MUTEX) == Verdict::Violated {
            broken.push(seed);
        }
        let counter = reports.verdict(&COUNTER);
        expect(
            format!("paused seed {seed}: counter {counter:?}"),
            counter == Verdict::Holds,
        );
    }
    expect(
        format!("a pause past the lease breaks mutex (seeds {broken:?})"),
        !broken.is_empty(),
    );
    unmet
}

fn main() -> ExitCode {
    let unmet = verify();
    if unmet.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("toy_family: {} expectations not met", unmet.len());
        ExitCode::FAILURE
    }
}

/// `cargo test` runs the example's expectations (`test = true` in Cargo.toml).
#[test]
fn the_toy_family_meets_its_expectations() {
    let unmet = verify();
    assert!(unmet.is_empty(), "not met: {unmet:#?}");
}
