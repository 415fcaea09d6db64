//! A small reader and writer for EDN (Extensible Data Notation), the format Jepsen and
//! Knossos write their histories in.
//!
//! Supported: `nil`, `true`/`false`, integers (64-bit, optional `N` suffix), floats
//! (optional `M` suffix), strings with escapes (`\t \r \n \\ \" \b \f \uXXXX`), characters
//! (`\a`, `\newline`, `\space`, `\tab`, `\return`, `\uXXXX`), keywords, symbols, lists,
//! vectors, maps, sets (`#{}`), comments (`;` to end of line), the discard form `#_`,
//! commas as whitespace, and tagged literals (`#inst "..."`, `#jepsen.history.Op{...}`),
//! which are kept as [`Value::Tagged`].
//!
//! The reader never panics, whatever the input: every problem is an [`EdnError`] naming
//! the 1-based line. Nesting deeper than [`MAX_DEPTH`] is an error rather than a stack
//! overflow, and discards (`#_`) are counted rather than recursed into, so no input can
//! overflow the stack. As the EDN specification requires, a map with a key twice and a
//! set with an element twice are errors.
//!
//! A Jepsen history is either one vector of operation maps or a sequence of maps, one per
//! line; [`read_history_forms`] accepts both and returns each map with its line.

use std::fmt;
use std::hash::{Hash, Hasher};

/// Maximum nesting depth of collections the reader accepts.
pub const MAX_DEPTH: usize = 256;

/// An EDN value.
///
/// Equality and hashing are structural; floats compare by bit pattern (so `Value` can be
/// `Eq` and `Hash`), and a list equals the vector with the same elements, as in Clojure.
/// Maps and sets compare in the order their entries were written.
#[derive(Clone, Debug)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A character such as `\a`.
    Char(char),
    /// A keyword, without its leading colon (`:ok` is `Keyword("ok")`).
    Keyword(String),
    /// A symbol.
    Symbol(String),
    /// A list `( ... )`.
    List(Vec<Value>),
    /// A vector `[ ... ]`.
    Vector(Vec<Value>),
    /// A map `{ k v ... }`, entries in the order written.
    Map(Vec<(Value, Value)>),
    /// A set `#{ ... }`, elements in the order written.
    Set(Vec<Value>),
    /// A tagged literal `#tag value`.
    Tagged(String, Box<Value>),
}

impl Value {
    /// A keyword value (`kw("ok")` is `:ok`).
    pub fn kw(name: &str) -> Value {
        Value::Keyword(name.to_string())
    }

    /// The elements of a list or vector.
    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) | Value::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The keyword's name, if this is a keyword.
    pub fn as_keyword(&self) -> Option<&str> {
        match self {
            Value::Keyword(k) => Some(k),
            _ => None,
        }
    }

    /// Whether this is `nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Look up a keyword key in a map (or in a tagged map such as a Jepsen record).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Keyword(n) if n == key))
                .map(|(_, v)| v),
            Value::Tagged(_, inner) => inner.get(key),
            _ => None,
        }
    }

    /// Convert a JSON value: null → nil, numbers → int or float, arrays → vectors,
    /// objects → maps with keyword keys.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::Str(s.clone()),
            serde_json::Value::Array(a) => Value::Vector(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (Value::Keyword(k.clone()), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// Convert to JSON: keywords and symbols become strings, maps become objects (keys
    /// printed), sets and lists become arrays, tags are dropped.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Nil => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Char(c) => J::String(c.to_string()),
            Value::Keyword(k) | Value::Symbol(k) => J::String(k.clone()),
            Value::List(v) | Value::Vector(v) | Value::Set(v) => {
                J::Array(v.iter().map(Value::to_json).collect())
            }
            Value::Map(m) => J::Object(
                m.iter()
                    .map(|(k, v)| {
                        let key = match k {
                            Value::Keyword(s) | Value::Symbol(s) | Value::Str(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (key, v.to_json())
                    })
                    .collect(),
            ),
            Value::Tagged(_, v) => v.to_json(),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (Str(a), Str(b)) => a == b,
            (Char(a), Char(b)) => a == b,
            (Keyword(a), Keyword(b)) => a == b,
            (Symbol(a), Symbol(b)) => a == b,
            (List(a) | Vector(a), List(b) | Vector(b)) => a == b,
            (Map(a), Map(b)) => a == b,
            (Set(a), Set(b)) => a == b,
            (Tagged(t, a), Tagged(u, b)) => t == u && a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, h: &mut H) {
        use Value::*;
        match self {
            Nil => h.write_u8(0),
            Bool(b) => {
                h.write_u8(1);
                b.hash(h)
            }
            Int(i) => {
                h.write_u8(2);
                i.hash(h)
            }
            Float(f) => {
                h.write_u8(3);
                f.to_bits().hash(h)
            }
            Str(s) => {
                h.write_u8(4);
                s.hash(h)
            }
            Char(c) => {
                h.write_u8(5);
                c.hash(h)
            }
            Keyword(k) => {
                h.write_u8(6);
                k.hash(h)
            }
            Symbol(s) => {
                h.write_u8(7);
                s.hash(h)
            }
            List(v) | Vector(v) => {
                h.write_u8(8);
                v.hash(h)
            }
            Map(m) => {
                h.write_u8(9);
                m.hash(h)
            }
            Set(v) => {
                h.write_u8(10);
                v.hash(h)
            }
            Tagged(t, v) => {
                h.write_u8(11);
                t.hash(h);
                v.hash(h)
            }
        }
    }
}

fn write_seq(f: &mut fmt::Formatter<'_>, open: &str, items: &[Value], close: &str) -> fmt::Result {
    f.write_str(open)?;
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        write!(f, "{v}")?;
    }
    f.write_str(close)
}

/// Prints EDN that [`parse`] reads back to an equal value.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("nil"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => {
                if x.is_finite() {
                    let s = format!("{x:?}");
                    f.write_str(&s)
                } else if x.is_nan() {
                    f.write_str("##NaN")
                } else if *x > 0.0 {
                    f.write_str("##Inf")
                } else {
                    f.write_str("##-Inf")
                }
            }
            Value::Str(s) => {
                f.write_str("\"")?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        '\r' => f.write_str("\\r")?,
                        c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("\"")
            }
            Value::Char(c) => match c {
                '\n' => f.write_str("\\newline"),
                ' ' => f.write_str("\\space"),
                '\t' => f.write_str("\\tab"),
                '\r' => f.write_str("\\return"),
                c if c.is_alphanumeric() || c.is_ascii_punctuation() => write!(f, "\\{c}"),
                c => write!(f, "\\u{:04x}", *c as u32),
            },
            Value::Keyword(k) => write!(f, ":{k}"),
            Value::Symbol(s) => f.write_str(s),
            Value::List(v) => write_seq(f, "(", v, ")"),
            Value::Vector(v) => write_seq(f, "[", v, "]"),
            Value::Set(v) => write_seq(f, "#{", v, "}"),
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} {v}")?;
                }
                f.write_str("}")
            }
            Value::Tagged(t, v) => write!(f, "#{t} {v}"),
        }
    }
}

/// A reading error: the 1-based line and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdnError {
    /// 1-based line of the problem.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for EdnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for EdnError {}

/// Parse every top-level form in `text`.
pub fn parse_all(text: &str) -> Result<Vec<Value>, EdnError> {
    let mut p = Parser::new(text);
    let mut out = Vec::new();
    while let Some(v) = p.next_form()? {
        out.push(v);
    }
    Ok(out)
}

/// Parse exactly one form (surrounding whitespace and comments allowed).
pub fn parse(text: &str) -> Result<Value, EdnError> {
    let mut p = Parser::new(text);
    let v = p.next_form()?.ok_or_else(|| EdnError {
        line: p.line,
        message: "expected a value, found end of input".into(),
    })?;
    p.skip_ws(0)?;
    if p.pos < p.bytes.len() {
        return Err(p.err("unexpected data after the value"));
    }
    Ok(v)
}

/// Parse the first form of `text` and return it with the text after it: a value
/// followed by free text, as in a line of Jepsen's log (`[1 2]\t:timed-out`).
pub fn parse_prefix(text: &str) -> Result<(Value, &str), EdnError> {
    let mut p = Parser::new(text);
    let v = p.next_form()?.ok_or_else(|| EdnError {
        line: p.line,
        message: "expected a value, found end of input".into(),
    })?;
    Ok((v, text.get(p.pos..).unwrap_or("")))
}

/// The forms of a Jepsen history with the line each starts on: the elements of a single
/// top-level vector (or list), or else every top-level form.
pub fn read_history_forms(text: &str) -> Result<Vec<(usize, Value)>, EdnError> {
    HistoryForms::new(text).collect()
}

/// An iterator over the forms of a Jepsen history (see [`read_history_forms`]), reading
/// one form at a time so that a large history never sits in memory as values.
pub struct HistoryForms<'a> {
    p: Parser<'a>,
    /// The closing bracket of the top-level vector, once it is known; 0 for a sequence
    /// of top-level forms.
    close: u8,
    open_line: usize,
    started: bool,
    done: bool,
}

impl<'a> HistoryForms<'a> {
    /// A reader over `text`.
    pub fn new(text: &'a str) -> HistoryForms<'a> {
        HistoryForms {
            p: Parser::new(text),
            close: 0,
            open_line: 0,
            started: false,
            done: false,
        }
    }

    fn next_form(&mut self) -> Result<Option<(usize, Value)>, EdnError> {
        let p = &mut self.p;
        if !self.started {
            self.started = true;
            p.skip_ws(0)?;
            self.close = match p.peek() {
                Some(b'[') => b']',
                Some(b'(') => b')',
                _ => 0,
            };
            if self.close != 0 {
                self.open_line = p.line;
                p.pos += 1;
            }
        }
        p.skip_ws(usize::from(self.close != 0))?;
        if self.close == 0 {
            if p.pos >= p.bytes.len() {
                return Ok(None);
            }
            let line = p.line;
            return Ok(Some((line, p.value(0)?)));
        }
        match p.peek() {
            None => Err(EdnError {
                line: p.line,
                message: format!("unclosed history vector opened on line {}", self.open_line),
            }),
            Some(c) if c == self.close => {
                p.pos += 1;
                p.skip_ws(0)?;
                if p.pos < p.bytes.len() {
                    return Err(p.err("unexpected data after the history vector"));
                }
                Ok(None)
            }
            Some(_) => {
                let line = p.line;
                Ok(Some((line, p.value(1)?)))
            }
        }
    }
}

impl Iterator for HistoryForms<'_> {
    type Item = Result<(usize, Value), EdnError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_form() {
            Ok(Some(x)) => Some(Ok(x)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A streaming EDN reader over a string.
struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

fn is_delim(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
    ) || c == 0x0c
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            line: 1,
        }
    }

    fn err(&self, message: impl Into<String>) -> EdnError {
        EdnError {
            line: self.line,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skip whitespace, commas, comments and discarded forms (`#_ form`) at nesting
    /// `depth`. Discards are counted, not recursed into: `#_ #_ a b` discards `a` and
    /// `b`, and a chain of any length takes no stack; a discarded form is read at the
    /// same depth as a value in its place would be, so its nesting is limited too.
    fn skip_ws(&mut self, depth: usize) -> Result<(), EdnError> {
        let mut discard = 0usize;
        let mut discard_line = 0;
        loop {
            match self.peek() {
                Some(b'\n') => {
                    self.line += 1;
                    self.pos += 1;
                }
                Some(b' ' | b'\t' | b'\r' | b',' | 0x0c) => self.pos += 1,
                Some(b';') => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                Some(b'#') if self.bytes.get(self.pos + 1) == Some(&b'_') => {
                    self.pos += 2;
                    if discard == 0 {
                        discard_line = self.line;
                    }
                    discard += 1;
                }
                None if discard > 0 => {
                    return Err(self.err(format!(
                        "#_ on line {discard_line} with nothing to discard (end of input)"
                    )))
                }
                Some(b')' | b']' | b'}') if discard > 0 => {
                    return Err(self.err(format!(
                        "#_ on line {discard_line} with nothing to discard before '{}'",
                        self.bytes[self.pos] as char
                    )))
                }
                _ if discard > 0 => {
                    self.value(depth)?;
                    discard -= 1;
                }
                _ => return Ok(()),
            }
        }
    }

    fn next_form(&mut self) -> Result<Option<Value>, EdnError> {
        self.skip_ws(0)?;
        if self.pos >= self.bytes.len() {
            return Ok(None);
        }
        self.value(0).map(Some)
    }

    /// The token starting at `pos`, up to a delimiter.
    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if is_delim(c) {
                break;
            }
            self.pos += 1;
        }
        // Delimiters are ASCII, so `start..pos` lies on char boundaries.
        self.text.get(start..self.pos).unwrap_or("")
    }

    fn value(&mut self, depth: usize) -> Result<Value, EdnError> {
        if depth >= MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        self.skip_ws(depth)?;
        let c = match self.peek() {
            Some(c) => c,
            None => return Err(self.err("expected a value, found end of input")),
        };
        match c {
            b'(' => {
                self.pos += 1;
                Ok(Value::List(self.seq(b')', depth)?))
            }
            b'[' => {
                self.pos += 1;
                Ok(Value::Vector(self.seq(b']', depth)?))
            }
            b'{' => {
                let line = self.line;
                self.pos += 1;
                let mut m: Vec<(Value, Value)> = Vec::with_capacity(4);
                let mut key_lines = Vec::with_capacity(4);
                loop {
                    self.skip_ws(depth + 1)?;
                    match self.peek() {
                        None => {
                            return Err(self.err(format!(
                                "unclosed map opened on line {line} (expected '}}')"
                            )))
                        }
                        Some(b'}') => {
                            self.pos += 1;
                            if let Some(i) = first_duplicate(m.len(), |i| &m[i].0) {
                                return Err(EdnError {
                                    line: key_lines[i],
                                    message: format!(
                                        "duplicate key {} in the map opened on line {line}",
                                        m[i].0
                                    ),
                                });
                            }
                            return Ok(Value::Map(m));
                        }
                        Some(_) => {
                            let key_line = self.line;
                            let k = self.value(depth + 1)?;
                            self.skip_ws(depth + 1)?;
                            match self.peek() {
                                Some(b'}') => {
                                    return Err(EdnError {
                                        line,
                                        message: format!(
                                            "map with an odd number of forms: key {k} has no value"
                                        ),
                                    })
                                }
                                None => {
                                    return Err(self.err(format!(
                                        "end of input where the value of key {k} was expected (map opened on line {line})"
                                    )))
                                }
                                _ => {}
                            }
                            let v = self.value(depth + 1)?;
                            m.push((k, v));
                            key_lines.push(key_line);
                        }
                    }
                }
            }
            b')' | b']' | b'}' => Err(self.err(format!("unexpected '{}'", c as char))),
            b'"' => self.string(),
            b'\\' => self.character(),
            b'#' => self.dispatch(depth),
            b':' => {
                self.pos += 1;
                let t = self.token();
                if t.is_empty() || t.starts_with(':') && t.len() == 1 {
                    return Err(self.err("empty keyword"));
                }
                Ok(Value::Keyword(t.to_string()))
            }
            _ => {
                let line = self.line;
                let t = self.token();
                if t.is_empty() {
                    self.pos += 1;
                    return Err(EdnError {
                        line,
                        message: format!("unexpected character '{}'", c.escape_ascii()),
                    });
                }
                atom(t).map_err(|e| EdnError {
                    line,
                    message: e.to_string(),
                })
            }
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<Value>, EdnError> {
        let open_line = self.line;
        let mut out = Vec::new();
        loop {
            self.skip_ws(depth + 1)?;
            match self.peek() {
                None => {
                    return Err(self.err(format!(
                        "unclosed collection opened on line {open_line} (expected '{}')",
                        close as char
                    )))
                }
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(_) => out.push(self.value(depth + 1)?),
            }
        }
    }

    fn dispatch(&mut self, depth: usize) -> Result<Value, EdnError> {
        self.pos += 1; // '#'
        match self.peek() {
            Some(b'{') => {
                let line = self.line;
                self.pos += 1;
                let items = self.seq(b'}', depth)?;
                if let Some(i) = first_duplicate(items.len(), |i| &items[i]) {
                    return Err(EdnError {
                        line,
                        message: format!(
                            "duplicate element {} in the set opened on line {line}",
                            items[i]
                        ),
                    });
                }
                Ok(Value::Set(items))
            }
            Some(b'#') => {
                self.pos += 1;
                let t = self.token();
                match t {
                    "Inf" => Ok(Value::Float(f64::INFINITY)),
                    "-Inf" => Ok(Value::Float(f64::NEG_INFINITY)),
                    "NaN" => Ok(Value::Float(f64::NAN)),
                    _ => Err(self.err(format!("unknown symbolic value ##{t}"))),
                }
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let t = self.token().to_string();
                let v = self.value(depth + 1)?;
                Ok(Value::Tagged(t, Box::new(v)))
            }
            _ => Err(self.err("unsupported dispatch character after '#'")),
        }
    }

    fn string(&mut self) -> Result<Value, EdnError> {
        let start_line = self.line;
        self.pos += 1;
        let mut s = String::new();
        loop {
            let rest = match self.text.get(self.pos..) {
                Some(r) => r,
                None => return Err(self.err("invalid position in string")),
            };
            let mut chars = rest.chars();
            let c = match chars.next() {
                Some(c) => c,
                None => {
                    return Err(
                        self.err(format!("unterminated string starting on line {start_line}"))
                    )
                }
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(Value::Str(s)),
                '\n' => {
                    self.line += 1;
                    s.push('\n');
                }
                '\\' => {
                    let e = match self.peek() {
                        Some(e) => e,
                        None => return Err(self.err("unterminated escape in string")),
                    };
                    self.pos += 1;
                    match e {
                        b't' => s.push('\t'),
                        b'r' => s.push('\r'),
                        b'n' => s.push('\n'),
                        b'\\' => s.push('\\'),
                        b'"' => s.push('"'),
                        b'b' => s.push('\u{8}'),
                        b'f' => s.push('\u{c}'),
                        b'u' => {
                            let hex = self.text.get(self.pos..self.pos + 4).unwrap_or("");
                            let code = u32::from_str_radix(hex, 16)
                                .ok()
                                .filter(|_| hex.len() == 4 && hex.is_ascii());
                            match code.and_then(char::from_u32) {
                                Some(ch) => {
                                    s.push(ch);
                                    self.pos += 4;
                                }
                                None => return Err(self.err("bad \\u escape in string")),
                            }
                        }
                        other => {
                            return Err(self.err(format!(
                                "unknown escape '\\{}' in string",
                                other.escape_ascii()
                            )))
                        }
                    }
                }
                c => s.push(c),
            }
        }
    }

    fn character(&mut self) -> Result<Value, EdnError> {
        self.pos += 1; // '\'
        let rest = self.text.get(self.pos..).unwrap_or("");
        let first = match rest.chars().next() {
            Some(c) => c,
            None => return Err(self.err("expected a character after '\\'")),
        };
        // A single character, possibly a delimiter itself (e.g. `\(`).
        let start = self.pos;
        self.pos += first.len_utf8();
        while let Some(c) = self.peek() {
            if is_delim(c) {
                break;
            }
            self.pos += 1;
        }
        let t = self.text.get(start..self.pos).unwrap_or("");
        let c = match t {
            "newline" => '\n',
            "space" => ' ',
            "tab" => '\t',
            "return" => '\r',
            "backspace" => '\u{8}',
            "formfeed" => '\u{c}',
            _ if t.chars().count() == 1 => first,
            _ if t.len() == 5 && t.starts_with('u') => {
                match u32::from_str_radix(&t[1..], 16)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(c) => c,
                    None => return Err(self.err(format!("bad character literal \\{t}"))),
                }
            }
            _ => return Err(self.err(format!("bad character literal \\{t}"))),
        };
        Ok(Value::Char(c))
    }
}

/// The index of the first of `n` items (`item(i)`) that equals an earlier one.
fn first_duplicate<'v>(n: usize, item: impl Fn(usize) -> &'v Value) -> Option<usize> {
    if n <= 16 {
        return (1..n).find(|&i| (0..i).any(|j| item(j) == item(i)));
    }
    let mut seen = std::collections::HashSet::with_capacity(n);
    (0..n).find(|&i| !seen.insert(item(i)))
}

/// A token that looks like a number but is not one: what is wrong, and the token.
struct BadNumber(&'static str, String);

impl std::fmt::Display for BadNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

/// A number, `nil`, `true`, `false` or a symbol.
fn atom(t: &str) -> Result<Value, BadNumber> {
    match t {
        "nil" => return Ok(Value::Nil),
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let b = t.as_bytes();
    let numeric = b[0].is_ascii_digit()
        || ((b[0] == b'-' || b[0] == b'+') && b.len() > 1 && b[1].is_ascii_digit());
    if !numeric {
        return Ok(Value::Symbol(t.to_string()));
    }
    let body = t.strip_suffix('N').unwrap_or(t);
    if body.bytes().skip(1).all(|c| c.is_ascii_digit()) && !t.ends_with('M') {
        return body
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| BadNumber("integer out of range", t.to_string()));
    }
    let body = t.strip_suffix('M').unwrap_or(t);
    let valid = body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
    match body.parse::<f64>() {
        Ok(x) if valid => Ok(Value::Float(x)),
        _ => Err(BadNumber("invalid number", t.to_string())),
    }
}

#[cfg(test)]
#[path = "edn_tests.rs"]
mod tests;
