//! A script that does not end, and what clients see meanwhile (Redis 7.0's
//! `busy-reply-threshold`): every command but those Redis allows then (`ALLOW_BUSY`:
//! AUTH, HELLO, MULTI, DISCARD, WATCH, UNWATCH, QUIT, RESET, SCRIPT KILL, SHUTDOWN) is
//! refused with `BUSY`; `SCRIPT KILL` stops the script if it has called no write command
//! (`UNKILLABLE` otherwise); `SHUTDOWN NOSAVE` ends the server.
//!
//! The model runs a script at once, to its end or to its budget (see [`super::lua`]). One
//! stopped at its budget ([`ScriptRun::endless`]) leaves the server busy here, holding the
//! reply a killed script gets until `SCRIPT KILL` delivers it to the script's connection.
//! The node makes the time pass: it freezes for the threshold before anyone else is
//! served, as Redis's one thread does while it runs the script.

use super::commands::Spec;
use super::lua::ScriptRun;
use super::{Client, ClientId, Ctx, RedisServer, ERR_SYNTAX};
use crate::locks::redis::resp::Value;

/// The reply to a command refused while a script runs past the threshold.
pub(crate) const ERR_BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const ERR_NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
const ERR_UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

/// The script that holds the server.
#[derive(Debug)]
pub(crate) struct BusyScript {
    /// The connection that runs it: its reply goes there.
    client: ClientId,
    /// What that connection gets when the script is killed.
    reply: Value,
    /// No write command yet: `SCRIPT KILL` may stop it.
    killable: bool,
}

impl RedisServer {
    /// Whether a script that does not end holds the server (commands get `BUSY`).
    pub fn busy(&self) -> bool {
        self.busy.is_some()
    }

    /// After a script ran: one stopped at its budget holds the server from now on.
    pub(crate) fn script_ran(&mut self, client: ClientId, run: ScriptRun, reply: &Value) {
        if run.endless {
            self.busy = Some(BusyScript {
                client,
                reply: reply.clone(),
                killable: run.killable(),
            });
        }
    }

    /// The reply a busy script's connection gets when it is killed becomes `reply` (the
    /// `EXEC` holding the script: its array, the killed script's error inside).
    pub(crate) fn hold_for_busy_script(&mut self, reply: &Value) {
        if let Some(b) = &mut self.busy {
            b.reply = reply.clone();
        }
    }

    /// `processCommand`'s busy check: a command not allowed while a script runs past the
    /// threshold is refused (EXEC discards the transaction, and a queued command flags it).
    pub(crate) fn refuse_when_busy(&mut self, spec: &Spec, client: &mut Client) -> Option<Value> {
        // The replication stream is applied as it comes (a real replica reads it once the
        // script ends; the model ran the script already).
        let stream = client.id == 0;
        if self.busy.is_none() || spec.has(super::commands::ALLOW_BUSY) || stream {
            return None;
        }
        if spec.name == "exec" {
            client.multi = None;
            self.watches.unwatch_all(client.id);
            return Some(Value::err(format!(
                "EXECABORT Transaction discarded because of: {ERR_BUSY}"
            )));
        }
        client.flag_multi_error();
        Some(Value::err(ERR_BUSY))
    }

    /// `BUSY` for a command the node answers itself (WAIT, ROLE, REPLICAOF), if busy.
    pub fn busy_reply(&self) -> Option<Value> {
        self.busy.as_ref().map(|_| Value::err(ERR_BUSY))
    }

    /// `SCRIPT KILL`.
    pub(crate) fn cmd_script_kill(&mut self, _: &mut Client, c: &mut Ctx, _: &[Vec<u8>]) -> Value {
        match self.busy.take() {
            None => Value::err(ERR_NOTBUSY),
            Some(b) if !b.killable => {
                self.busy = Some(b);
                Value::err(ERR_UNKILLABLE)
            }
            Some(b) => {
                c.fx.killed = Some((b.client, b.reply));
                Value::ok()
            }
        }
    }

    /// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: the node stops (no reply). There is
    /// nothing to save (the AOF is written as it goes), so the flags only matter while a
    /// script is busy, when only `NOSAVE` may stop the server.
    pub(crate) fn cmd_shutdown(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let (mut nosave, mut save, mut others, mut abort) = (false, false, false, false);
        for a in &args[1..] {
            match a.to_ascii_lowercase().as_slice() {
                b"nosave" => nosave = true,
                b"save" => save = true,
                b"now" | b"force" => others = true,
                b"abort" => abort = true,
                _ => return Value::err(ERR_SYNTAX),
            }
        }
        if (abort && (nosave || save || others)) || (nosave && save) {
            return Value::err(ERR_SYNTAX);
        }
        if abort {
            return Value::err("ERR No shutdown in progress.");
        }
        if !nosave && self.busy.is_some() {
            return Value::err(ERR_BUSY);
        }
        c.fx.shutdown = true;
        Value::ok()
    }
}
