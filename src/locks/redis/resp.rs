//! RESP codec: the Redis serialization protocol, version 2, and the RESP3 types a server
//! sends after `HELLO 3` (null, boolean, double, map, set, push).
//!
//! Pure functions over byte slices, so the same code serves the simulated server, the
//! lock clients and (later) a live `redis-server`:
//!
//! - [`Value`] and [`Value::encode`]: replies (and anything else) on the wire;
//! - [`decode`]: incremental decoding of one value, for clients reading replies;
//! - [`decode_command`]: what a Redis server accepts from clients: a multibulk array of
//!   bulk strings, or an inline command line;
//! - [`encode_command`]: a command as clients send it;
//! - [`Replies`] and [`Commands`]: the two as [`Decoder`](crate::net::Decoder)s for the
//!   shared transport.
//!
//! Decoders never panic on any input: a malformed frame is a [`ProtocolError`] and an
//! incomplete one is `Ok(None)` ("read more bytes and call again with the whole buffer").

use std::fmt;

/// The largest bulk string (and array) length accepted: Redis's default
/// `proto-max-bulk-len`, 512 MiB.
pub(crate) const MAX_BULK_LEN: i64 = 512 * 1024 * 1024;

/// The longest line (length header, integer, simple string, inline command) a decoder
/// buffers while waiting for its terminator: Redis's `PROTO_INLINE_MAX_SIZE`, 64 KiB.
pub(crate) const MAX_LINE_LEN: usize = 64 * 1024;

/// The deepest nesting of arrays [`decode`] accepts. Bounded so that neither decoding
/// nor dropping a hostile value can exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 128;

/// One RESP value. The first five are RESP2's; the rest are RESP3's, which
/// [`Value::encode`] writes in their RESP2 shape (null as a nil bulk, a map as a flat
/// array, ...) and [`Value::encode_resp`] writes natively for a RESP3 connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// `+OK\r\n`: a simple string (no CR or LF inside).
    Simple(String),
    /// `-ERR message\r\n`: an error; the text includes the code (`ERR`, `NOSCRIPT`, ...).
    Error(String),
    /// `:42\r\n`: a signed 64-bit integer.
    Integer(i64),
    /// `$3\r\nfoo\r\n`: a binary-safe string; `None` is the nil bulk `$-1\r\n`.
    Bulk(Option<Vec<u8>>),
    /// `*2\r\n...`: an array; `None` is the nil array `*-1\r\n`.
    Array(Option<Vec<Value>>),
    /// RESP3 `_\r\n`: null.
    Null,
    /// RESP3 `#t\r\n` / `#f\r\n`.
    Boolean(bool),
    /// RESP3 `,1.5\r\n`: a double, as its text.
    Double(String),
    /// RESP3 `%1\r\n...`: a map (in order); RESP2: a flat array key, value, ...
    Map(Vec<(Value, Value)>),
    /// RESP3 `~1\r\n...`: a set; RESP2: an array.
    Set(Vec<Value>),
    /// RESP3 `>3\r\n...`: an out-of-band push (pub/sub messages); RESP2: an array.
    Push(Vec<Value>),
}

impl Value {
    /// `+OK`.
    pub fn ok() -> Value {
        Value::Simple("OK".to_string())
    }

    /// The nil bulk string `$-1` (what Redis 2 protocol replies for "no value").
    pub fn nil() -> Value {
        Value::Bulk(None)
    }

    /// A bulk string holding a copy of `bytes`.
    pub fn bulk(bytes: &[u8]) -> Value {
        Value::Bulk(Some(bytes.to_vec()))
    }

    /// An integer reply.
    pub fn int(n: i64) -> Value {
        Value::Integer(n)
    }

    /// A simple string reply.
    pub fn simple(s: impl Into<String>) -> Value {
        Value::Simple(s.into())
    }

    /// An error reply. `msg` includes the error code, e.g. `"ERR syntax error"`.
    /// CR and LF become spaces, as Redis's `addReplyError` does, so the value is exactly
    /// what a client decodes.
    pub fn err(msg: impl Into<String>) -> Value {
        Value::Error(sanitize_line(msg.into()))
    }

    /// An array of values.
    pub fn array(items: Vec<Value>) -> Value {
        Value::Array(Some(items))
    }

    /// The integer, if this is an integer reply.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// The bytes, if this is a non-nil bulk string.
    pub fn as_bulk(&self) -> Option<&[u8]> {
        match self {
            Value::Bulk(Some(b)) => Some(b),
            _ => None,
        }
    }

    /// The text, if this is a simple string.
    pub fn as_simple(&self) -> Option<&str> {
        match self {
            Value::Simple(s) => Some(s),
            _ => None,
        }
    }

    /// The message (with its code), if this is an error reply.
    pub fn as_error(&self) -> Option<&str> {
        match self {
            Value::Error(s) => Some(s),
            _ => None,
        }
    }

    /// The items, if this is a non-nil array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(Some(items)) => Some(items),
            _ => None,
        }
    }

    /// True for the nil bulk string, the nil array and the RESP3 null.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Bulk(None) | Value::Array(None) | Value::Null)
    }

    /// True for `+OK`.
    pub fn is_ok(&self) -> bool {
        matches!(self, Value::Simple(s) if s == "OK")
    }

    /// True for an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_))
    }

    /// Appends the RESP2 wire form of this value to `out` (RESP3 types in their RESP2
    /// shape, as Redis writes them to a RESP2 client). CR and LF inside simple strings and
    /// errors are written as spaces (they cannot be framed otherwise).
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_resp(2, out)
    }

    /// Appends the wire form of this value for a connection speaking protocol `resp`
    /// (2 or 3): under RESP3 nil bulks and nil arrays are `_`, and maps, sets, pushes,
    /// booleans and doubles have their own types.
    pub fn encode_resp(&self, resp: u8, out: &mut Vec<u8>) {
        let v3 = resp >= 3;
        match self {
            Value::Simple(s) => encode_line(b'+', s, out),
            Value::Error(s) => encode_line(b'-', s, out),
            Value::Integer(n) => {
                out.push(b':');
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Value::Bulk(None) | Value::Array(None) | Value::Null if v3 => {
                out.extend_from_slice(b"_\r\n")
            }
            Value::Bulk(None) | Value::Null => out.extend_from_slice(b"$-1\r\n"),
            Value::Bulk(Some(b)) => encode_bulk(b, out),
            Value::Array(None) => out.extend_from_slice(b"*-1\r\n"),
            Value::Array(Some(items)) => encode_items(b'*', items, resp, out),
            Value::Boolean(b) if v3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
            }
            Value::Boolean(b) => out.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
            Value::Double(d) if v3 => encode_line(b',', d, out),
            Value::Double(d) => encode_bulk(d.as_bytes(), out),
            Value::Map(pairs) => {
                if v3 {
                    encode_header(b'%', pairs.len(), out);
                } else {
                    encode_header(b'*', pairs.len() * 2, out);
                }
                for (k, v) in pairs {
                    k.encode_resp(resp, out);
                    v.encode_resp(resp, out);
                }
            }
            Value::Set(items) => encode_items(if v3 { b'~' } else { b'*' }, items, resp, out),
            Value::Push(items) => encode_items(if v3 { b'>' } else { b'*' }, items, resp, out),
        }
    }

    /// The wire form of this value.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

fn sanitize_line(s: String) -> String {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ")
    } else {
        s
    }
}

fn encode_line(tag: u8, s: &str, out: &mut Vec<u8>) {
    out.push(tag);
    out.extend(
        s.bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

fn encode_items(tag: u8, items: &[Value], resp: u8, out: &mut Vec<u8>) {
    encode_header(tag, items.len(), out);
    for item in items {
        item.encode_resp(resp, out);
    }
}

fn encode_header(tag: u8, len: usize, out: &mut Vec<u8>) {
    out.push(tag);
    out.extend_from_slice(len.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn encode_bulk(b: &[u8], out: &mut Vec<u8>) {
    encode_header(b'$', b.len(), out);
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// A command's arguments, the name first (what [`decode_command`] yields).
pub(crate) type Command = Vec<Vec<u8>>;

/// Appends a command as clients send it: a multibulk array of bulk strings.
pub fn encode_command(args: &[&[u8]], out: &mut Vec<u8>) {
    encode_header(b'*', args.len(), out);
    for arg in args {
        encode_bulk(arg, out);
    }
}

/// Encode owned commands one after another (an AOF, a replication stream or snapshot);
/// [`decode_command`] reads them back in order.
pub(crate) fn encode_commands(cmds: &[Command]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cmds {
        let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
        encode_command(&args, &mut out);
    }
    out
}

/// A malformed RESP stream. The message is Redis's where Redis has one (e.g.
/// `Protocol error: expected '$', got 'x'`); a server replies with
/// [`ProtocolError::to_reply`] and closes the connection, as Redis does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    message: String,
}

impl ProtocolError {
    /// A protocol error with the given message.
    pub fn new(message: impl Into<String>) -> ProtocolError {
        ProtocolError {
            message: message.into(),
        }
    }

    /// The message, e.g. `Protocol error: invalid bulk length`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error reply Redis sends before closing the connection: `-ERR <message>`.
    pub fn to_reply(&self) -> Value {
        Value::err(format!("ERR {}", self.message))
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProtocolError {}

fn perr<T>(message: impl Into<String>) -> Result<T, ProtocolError> {
    Err(ProtocolError::new(message))
}

/// Parses a decimal i64 exactly as Redis's `string2ll` does: an optional `-`, then
/// digits without leading zeros (`0` alone is fine), no `+`, no spaces, no overflow.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.split_first() {
        None => return None,
        Some((b'-', rest)) => (true, rest),
        Some(_) => (false, s),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Reads a line terminated by CRLF starting at `start`: `Ok(Some((line, next)))`, or
/// `Ok(None)` if the terminator has not arrived. A CR not followed by LF is an error.
fn read_line(buf: &[u8], start: usize) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    let rest = buf.get(start..).unwrap_or(&[]);
    match rest.iter().position(|&b| b == b'\r') {
        None if rest.len() > MAX_LINE_LEN => perr("Protocol error: line too long"),
        None => Ok(None),
        Some(cr) => match rest.get(cr + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some((&rest[..cr], start + cr + 2))),
            Some(_) => perr("Protocol error: expected '\\n' after '\\r'"),
        },
    }
}

/// Reads a length header (`$` or `*`) at `start`: -1 for nil, else 0..=[`MAX_BULK_LEN`].
fn read_len(buf: &[u8], start: usize, what: &str) -> Result<Option<(i64, usize)>, ProtocolError> {
    let Some((line, next)) = read_line(buf, start)? else {
        return Ok(None);
    };
    match parse_i64(line) {
        Some(n) if (-1..=MAX_BULK_LEN).contains(&n) => Ok(Some((n, next))),
        _ => perr(format!("Protocol error: invalid {what} length")),
    }
}

/// The kind of aggregate being filled while decoding.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Array,
    Map,
    Set,
    Push,
}

impl Aggregate {
    fn of(tag: u8) -> Option<Aggregate> {
        Some(match tag {
            b'*' => Aggregate::Array,
            b'%' => Aggregate::Map,
            b'~' => Aggregate::Set,
            b'>' => Aggregate::Push,
            _ => return None,
        })
    }

    fn finish(self, mut items: Vec<Value>) -> Value {
        match self {
            Aggregate::Array => Value::Array(Some(items)),
            Aggregate::Set => Value::Set(items),
            Aggregate::Push => Value::Push(items),
            Aggregate::Map => {
                let mut pairs = Vec::with_capacity(items.len() / 2);
                let mut it = items.drain(..);
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                Value::Map(pairs)
            }
        }
    }
}

/// Decodes one value from the front of `buf`: RESP2, and the RESP3 types a server sends
/// after `HELLO 3` (`_ # , ( = ! % ~ >`; big numbers and verbatim strings decode as
/// bulk strings, blob errors as errors).
///
/// Returns `Ok(None)` when `buf` holds only part of a value (call again with more bytes,
/// from the same start), or the value and the number of bytes it took. Rejects unknown
/// type bytes, bad integers, lengths below -1 or above `MAX_BULK_LEN`, a bulk string
/// not followed by CRLF, lines longer than `MAX_LINE_LEN` and nesting deeper than
/// `MAX_DEPTH`. Never panics.
pub fn decode(buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
    let mut pos = 0;
    // Aggregates being filled: (kind, items so far, expected item count). An explicit
    // stack rather than recursion, so hostile nesting cannot overflow the call stack.
    let mut stack: Vec<(Aggregate, Vec<Value>, usize)> = Vec::new();
    loop {
        let Some(&tag) = buf.get(pos) else {
            return Ok(None);
        };
        let mut value = match tag {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {
                let Some((line, next)) = read_line(buf, pos + 1)? else {
                    return Ok(None);
                };
                pos = next;
                let text = || String::from_utf8_lossy(line).into_owned();
                match tag {
                    b'+' => Value::Simple(text()),
                    b'-' => Value::Error(text()),
                    b'_' if line.is_empty() => Value::Null,
                    b'#' if line == b"t" => Value::Boolean(true),
                    b'#' if line == b"f" => Value::Boolean(false),
                    b',' => Value::Double(text()),
                    b'(' => Value::Bulk(Some(line.to_vec())),
                    b':' => match parse_i64(line) {
                        Some(n) => Value::Integer(n),
                        None => return perr("Protocol error: invalid integer"),
                    },
                    _ => return perr("Protocol error: invalid RESP3 null or boolean"),
                }
            }
            b'$' | b'=' | b'!' => {
                let Some((len, next)) = read_len(buf, pos + 1, "bulk")? else {
                    return Ok(None);
                };
                if len < 0 {
                    pos = next;
                    Value::Bulk(None)
                } else {
                    let end = next + len as usize;
                    if buf.len() < end + 2 {
                        return Ok(None);
                    }
                    if &buf[end..end + 2] != b"\r\n" {
                        return perr("Protocol error: expected '\\r\\n' after bulk string");
                    }
                    pos = end + 2;
                    let body = &buf[next..end];
                    match tag {
                        // A verbatim string starts with its 3-letter format and a colon.
                        b'=' => Value::Bulk(Some(body.get(4..).unwrap_or_default().to_vec())),
                        b'!' => Value::Error(String::from_utf8_lossy(body).into_owned()),
                        _ => Value::Bulk(Some(body.to_vec())),
                    }
                }
            }
            b'*' | b'%' | b'~' | b'>' => {
                let Some((len, next)) = read_len(buf, pos + 1, "multibulk")? else {
                    return Ok(None);
                };
                pos = next;
                let kind = Aggregate::of(tag).expect("an aggregate tag");
                let count = if kind == Aggregate::Map {
                    len.saturating_mul(2)
                } else {
                    len
                };
                match count {
                    -1 if kind == Aggregate::Array => Value::Array(None),
                    n if n < 0 => return perr("Protocol error: invalid multibulk length"),
                    0 => kind.finish(Vec::new()),
                    n => {
                        if stack.len() >= MAX_DEPTH {
                            return perr("Protocol error: arrays nested too deeply");
                        }
                        // Capacity is capped: the count is untrusted until items arrive.
                        let n = n as usize;
                        stack.push((kind, Vec::with_capacity(n.min(1024)), n));
                        continue;
                    }
                }
            }
            other => {
                return perr(format!(
                    "Protocol error: unexpected reply type byte {:?}",
                    char::from(other)
                ))
            }
        };
        // Hand the finished value to its enclosing aggregates, closing those now full.
        loop {
            let Some((_, items, expected)) = stack.last_mut() else {
                return Ok(Some((value, pos)));
            };
            items.push(value);
            if items.len() < *expected {
                break;
            }
            match stack.pop() {
                Some((kind, items, _)) => value = kind.finish(items),
                None => unreachable!("stack.last_mut() was Some"),
            }
        }
    }
}

/// Decodes one client command from the front of `buf`, as a Redis server does: a
/// multibulk array of bulk strings (when the first byte is `*`), otherwise an inline
/// command (a line ending in `\n` or `\r\n`, split on spaces with Redis's quoting rules:
/// `"..."` with `\n \r \t \b \a \xHH` escapes, `'...'`).
///
/// Returns `Ok(None)` when more bytes are needed, else the arguments (never empty) and
/// the bytes consumed. Empty commands (`*0`, `*-1`, blank lines), which Redis skips
/// without replying, are skipped and counted in the bytes consumed. Errors carry
/// Redis's messages (`Protocol error: expected '$', got 'x'`, `invalid bulk length`,
/// `invalid multibulk length`, `unbalanced quotes in request`, `too big inline
/// request`, ...). Stricter than Redis in one way: the CR after a header line or bulk
/// argument must be followed by LF (Redis skips two bytes unchecked).
pub(crate) fn decode_command(buf: &[u8]) -> Result<Option<(Command, usize)>, ProtocolError> {
    let mut pos = 0;
    while pos < buf.len() {
        let rest = &buf[pos..];
        let parsed = if rest[0] == b'*' {
            decode_multibulk(rest)?
        } else {
            decode_inline(rest)?
        };
        let Some((args, used)) = parsed else {
            return Ok(None);
        };
        pos += used;
        if !args.is_empty() {
            return Ok(Some((args, pos)));
        }
    }
    Ok(None)
}

/// Finds a CRLF-terminated header line at `start` the way Redis's
/// `processMultibulkBuffer` does. `too_big` names Redis's error when no CR arrives.
fn command_line<'a>(
    buf: &'a [u8],
    start: usize,
    too_big: &str,
) -> Result<Option<(&'a [u8], usize)>, ProtocolError> {
    let rest = buf.get(start..).unwrap_or(&[]);
    match rest.iter().position(|&b| b == b'\r') {
        None if rest.len() > MAX_LINE_LEN => perr(format!("Protocol error: {too_big}")),
        None => Ok(None),
        Some(cr) => match rest.get(cr + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some((&rest[..cr], start + cr + 2))),
            Some(_) => perr("Protocol error: expected '\\n' after '\\r'"),
        },
    }
}

fn decode_multibulk(buf: &[u8]) -> Result<Option<(Command, usize)>, ProtocolError> {
    let Some((line, mut pos)) = command_line(buf, 0, "too big mbulk count string")? else {
        return Ok(None);
    };
    let count = match parse_i64(&line[1..]) {
        Some(n) if n <= i64::from(i32::MAX) => n,
        _ => return perr("Protocol error: invalid multibulk length"),
    };
    if count <= 0 {
        return Ok(Some((Vec::new(), pos)));
    }
    let mut args = Vec::with_capacity((count as usize).min(1024));
    for _ in 0..count {
        let Some((line, next)) = command_line(buf, pos, "too big bulk count string")? else {
            return Ok(None);
        };
        match line.first() {
            Some(b'$') => {}
            Some(&c) => {
                return perr(format!(
                    "Protocol error: expected '$', got '{}'",
                    char::from(c)
                ))
            }
            None => return perr("Protocol error: expected '$', got ' '"),
        }
        let len = match parse_i64(&line[1..]) {
            Some(n) if (0..=MAX_BULK_LEN).contains(&n) => n as usize,
            _ => return perr("Protocol error: invalid bulk length"),
        };
        let end = next + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return perr("Protocol error: expected '\\r\\n' after bulk argument");
        }
        args.push(buf[next..end].to_vec());
        pos = end + 2;
    }
    Ok(Some((args, pos)))
}

fn decode_inline(buf: &[u8]) -> Result<Option<(Command, usize)>, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > MAX_LINE_LEN {
            return perr("Protocol error: too big inline request");
        }
        return Ok(None);
    };
    let line = match buf[..nl].split_last() {
        Some((b'\r', line)) => line,
        _ => &buf[..nl],
    };
    match split_args(line) {
        Some(args) => Ok(Some((args, nl + 1))),
        None => perr("Protocol error: unbalanced quotes in request"),
    }
}

/// Decodes replies: what a client reads from a Redis server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Replies;

impl crate::net::Decoder for Replies {
    type Item = Value;
    type Error = ProtocolError;

    fn decode(&self, buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
        decode(buf)
    }
}

/// Decodes commands: what a Redis server reads from its clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Commands;

impl crate::net::Decoder for Commands {
    type Item = Command;
    type Error = ProtocolError;

    fn decode(&self, buf: &[u8]) -> Result<Option<(Command, usize)>, ProtocolError> {
        decode_command(buf)
    }
}

/// Redis's `sdssplitargs`: splits an inline command line into arguments. `None` means
/// unbalanced quotes (or a closing quote not followed by a space). Like the C original,
/// the line ends at the first NUL byte.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    // C's isspace in the "C" locale.
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let (mut in_dq, mut in_sq, mut done) = (false, false, false);
        while !done {
            let c = at(p);
            if in_dq {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && at(p + 2).is_ascii_hexdigit()
                    && at(p + 3).is_ascii_hexdigit()
                {
                    current.push(hex_val(at(p + 2)) * 16 + hex_val(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => b'\x08',
                        b'a' => b'\x07',
                        other => other,
                    });
                } else if c == b'"' {
                    // A closing quote must be followed by a space or the end.
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_sq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => current.push(c),
                }
            }
            if p < line.len() {
                p += 1;
            }
        }
        args.push(current);
    }
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c.wrapping_sub(b'A').wrapping_add(10),
    }
}

#[cfg(test)]
#[path = "resp_tests.rs"]
mod tests;
