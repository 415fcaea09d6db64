//! `EVAL`, `EVALSHA` and `SCRIPT`: any script, run by the embedded Lua engine
//! ([`super::lua`]) atomically inside one command, its `redis.call`s executed by the
//! model as a script client. Writes before an error are kept (no rollback), and each
//! write propagates as its own effect (Redis 7's effects replication).

use super::commands::{lookup, LookupError, NOSCRIPT, WRITE};
use super::connection::help;
pub(crate) use super::lua::ERR_NOSCRIPT;
use super::lua::{LuaEngine, ScriptRun, INSTRUCTIONS_PER_MS};
use super::{lossy, Client, Ctx, RedisServer, ERR_NOT_INT};
use crate::locks::redis::resp::{parse_i64, Value};

impl RedisServer {
    fn engine(&mut self) -> &mut LuaEngine {
        let rand = self.lua_rand.clone();
        self.lua.get_or_insert_with(|| LuaEngine::new(rand))
    }

    pub(crate) fn cmd_eval(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.eval(cl, c, args, false)
    }

    pub(crate) fn cmd_evalsha(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.eval(cl, c, args, true)
    }

    /// `EVAL script numkeys key... arg...` / `EVALSHA sha1 numkeys key... arg...`.
    fn eval(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>], by_sha: bool) -> Value {
        // Redis rejects a SHA of the wrong length before looking at anything else.
        if by_sha && args[1].len() != 40 {
            return Value::err(ERR_NOSCRIPT);
        }
        let Some(numkeys) = parse_i64(&args[2]) else {
            return Value::err(ERR_NOT_INT);
        };
        if numkeys > args.len() as i64 - 3 {
            return Value::err("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Value::err("ERR Number of keys can't be negative");
        }
        let sha = if by_sha {
            let sha = lossy(&args[1]).to_ascii_lowercase();
            if !self.lua.as_ref().is_some_and(|e| e.exists(&sha)) {
                return Value::err(ERR_NOSCRIPT);
            }
            sha
        } else {
            match self.engine().load(&args[1]) {
                Ok(sha) => sha,
                Err(e) => return e,
            }
        };
        let split = 3 + numkeys as usize;
        let (keys, argv) = (&args[3..split], &args[split..]);
        let mut engine = self.lua.take().expect("loaded above");
        // The script client starts in the caller's database; its SELECTs stay its own.
        let mut script_client = Client::internal(cl.db);
        let budget = self.config.busy_reply_threshold_ms * INSTRUCTIONS_PER_MS;
        let instructions = engine.instructions();
        let mut first_write_at = None;
        let (reply, mut run) = engine.run(&sha, keys, argv, budget, &mut |cmd| {
            self.script_call(&mut script_client, c, cmd, &mut || {
                first_write_at.get_or_insert_with(|| instructions());
            })
        });
        self.lua = Some(engine);
        c.db = cl.db;
        run.first_write_at = first_write_at;
        self.script_ran(cl.id, run, &reply);
        // A transaction's scripts add up.
        c.fx.script = Some(match c.fx.script {
            None => run,
            Some(before) => ScriptRun {
                instructions: before.instructions + run.instructions,
                first_write_at: before.first_write_at.or(run.first_write_at),
                endless: before.endless || run.endless,
            },
        });
        reply
    }

    /// One `redis.call`: the checks Redis's `scriptCall` makes, then the command;
    /// `wrote` is told before a write command runs (Redis's `SCRIPT_WRITE_DIRTY`).
    fn script_call(
        &mut self,
        client: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
        wrote: &mut dyn FnMut(),
    ) -> Value {
        let spec = match lookup(args) {
            Ok(spec) => spec,
            Err(LookupError::Arity(_)) => {
                return Value::err("ERR Wrong number of args calling Redis command from script")
            }
            Err(_) => return Value::err("ERR Unknown Redis command called from script"),
        };
        if spec.has(NOSCRIPT) {
            return Value::err("ERR This Redis command is not allowed from script");
        }
        if spec.has(WRITE) {
            wrote();
        }
        self.call(spec, client, c, args)
    }

    /// `SCRIPT LOAD script`: compiles and caches it; its SHA. Not propagated (Redis 7
    /// replicates script effects).
    pub(crate) fn cmd_script_load(
        &mut self,
        _: &mut Client,
        _: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        match self.engine().load(&args[2]) {
            Ok(sha) => Value::bulk(sha.as_bytes()),
            Err(e) => e,
        }
    }

    pub(crate) fn cmd_script_exists(
        &mut self,
        _: &mut Client,
        _: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        let known = |sha: &Vec<u8>| {
            let sha = lossy(sha).to_ascii_lowercase();
            self.lua.as_ref().is_some_and(|e| e.exists(&sha))
        };
        Value::array(
            args[2..]
                .iter()
                .map(|sha| Value::int(i64::from(known(sha))))
                .collect(),
        )
    }

    pub(crate) fn cmd_script_flush(
        &mut self,
        _: &mut Client,
        _: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        let mode_ok = match args.get(2) {
            None => true,
            Some(m) => {
                args.len() == 3 && matches!(m.to_ascii_lowercase().as_slice(), b"sync" | b"async")
            }
        };
        if !mode_ok {
            return Value::err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        }
        if let Some(e) = &mut self.lua {
            e.flush();
        }
        Value::ok()
    }

    pub(crate) fn cmd_script_help(&mut self, _: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        help(
            "SCRIPT",
            &[
                "EXISTS <sha1> [<sha1> ...]",
                "FLUSH [ASYNC|SYNC]",
                "KILL",
                "LOAD <script>",
                "HELP",
            ],
        )
    }
}
