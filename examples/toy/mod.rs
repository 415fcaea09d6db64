//! The toy family: one server `toy-0` granting a lease on its wall clock, with a counter
//! as the fencing token; written with nothing but [`locksim::plugin`]. A client paused
//! past its lease breaks mutual exclusion, and the token keeps the counter right anyway:
//! Kleppmann's argument, on a family of twenty lines.
//!
//! Shared by two examples: `toy_family` (runs it from Rust and checks its verdicts) and
//! `my_locksim` (a `locksim` command line that knows it).

use locksim::plugin::*;
use serde::Deserialize;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// `algorithm = "toy"`: one server `toy-0` granting a lease on its wall clock with a
/// counter as the fencing token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toy {
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
