//! `[workload.client]`: an external lock client, any program that speaks the protocol of
//! `docs/external-clients.md` on its stdin and stdout, in place of the family's own
//! client. It runs only in live mode: a real program's threads, sockets and clocks
//! cannot be simulated, so every other command rejects a scenario that names one.

use crate::key_error::KeyError;
use crate::locks::param;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// How long an adapter may take beyond a request's own timeout before it is taken to
/// hang, ms of the time its client ran (default 30000).
pub const DEFAULT_REPLY_GRACE_MS: u64 = 30_000;

/// `[workload.client]`: the adapter program one client node runs, with its arguments and
/// extra environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table: command = [\"PROGRAM\", \"ARG\", ...], env = { NAME = \"value\" }, reply_grace_ms = N"
)]
pub struct ClientProgram {
    /// The program and its arguments (non-empty). A relative program path with a `/` is
    /// taken from the scenario file's folder (from the current folder on the command
    /// line); one without, from `PATH`.
    pub command: Vec<String>,
    /// Extra environment of the adapter ({}).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long beyond a request's `timeout_ms` the adapter may take to reply, ms of the
    /// time its client ran (default 30000).
    #[serde(default = "default_reply_grace")]
    pub reply_grace_ms: u64,
}

fn default_reply_grace() -> u64 {
    DEFAULT_REPLY_GRACE_MS
}

impl ClientProgram {
    /// The program given on the command line (`--client "CMD ARGS"`, split on spaces),
    /// with the scenario's environment and grace if it names one; `None` for no words.
    pub fn from_command_line(words: &str, scenario: Option<&ClientProgram>) -> Option<Self> {
        let command: Vec<String> = words.split_whitespace().map(str::to_string).collect();
        if command.is_empty() {
            return None;
        }
        Some(ClientProgram {
            command,
            env: scenario.map(|s| s.env.clone()).unwrap_or_default(),
            reply_grace_ms: scenario.map_or(DEFAULT_REPLY_GRACE_MS, |s| s.reply_grace_ms),
        })
    }

    /// Values serde cannot check, each error naming its key (under `workload.client`).
    pub(super) fn validate(&self) -> Result<(), KeyError> {
        let under = |e: KeyError| e.under_key("workload.client");
        match self.command.first() {
            None => {
                return Err(under(KeyError::new(
                    "command",
                    "expected a non-empty array of strings: the program, then its arguments",
                )))
            }
            Some(p) if p.trim().is_empty() => {
                return Err(under(KeyError::new(
                    "command",
                    "expected the program's name or path first, got an empty string",
                )))
            }
            Some(_) => {}
        }
        if let Some(k) = self
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains('=') || k.contains('\0'))
        {
            return Err(under(KeyError::new(
                "env",
                format!("expected environment variable names (no `=`, not empty), got {k:?}"),
            )));
        }
        if let Some((k, _)) = self.env.iter().find(|(_, v)| v.contains('\0')) {
            return Err(under(KeyError::new(
                &format!("env.{k}"),
                "expected a string without NUL characters",
            )));
        }
        param::positive("reply_grace_ms", self.reply_grace_ms).map_err(under)
    }

    /// The same program with a relative path containing a `/` taken from `dir` (the
    /// scenario file's folder); a bare name stays for `PATH` to find.
    pub fn resolved_from(mut self, dir: &Path) -> Self {
        let program = &self.command[0];
        if program.contains('/') && Path::new(program).is_relative() {
            self.command[0] = dir.join(program).to_string_lossy().into_owned();
        }
        self
    }

    /// The command as one line, for messages.
    pub fn display(&self) -> String {
        self.command.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_a_slash_is_taken_from_the_scenarios_folder() {
        let p = ClientProgram {
            command: vec!["./adapter.py".into(), "x/y".into()],
            env: BTreeMap::new(),
            reply_grace_ms: 1,
        };
        let r = p.clone().resolved_from(Path::new("tests/fixtures"));
        assert_eq!(r.command, ["tests/fixtures/./adapter.py", "x/y"]);
        let bare = ClientProgram {
            command: vec!["python3".into()],
            ..p.clone()
        };
        assert_eq!(bare.clone().resolved_from(Path::new("a")), bare);
        let abs = ClientProgram {
            command: vec!["/usr/bin/python3".into()],
            ..p
        };
        assert_eq!(abs.clone().resolved_from(Path::new("a")), abs);
    }

    #[test]
    fn the_command_line_keeps_the_scenarios_environment() {
        let s = ClientProgram {
            command: vec!["a".into()],
            env: [("K".to_string(), "v".to_string())].into(),
            reply_grace_ms: 7,
        };
        let c = ClientProgram::from_command_line("python3  b.py -v", Some(&s)).unwrap();
        assert_eq!(c.command, ["python3", "b.py", "-v"]);
        assert_eq!((c.env, c.reply_grace_ms), (s.env, 7));
        assert_eq!(ClientProgram::from_command_line("  ", None), None);
    }
}
