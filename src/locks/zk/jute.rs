//! Jute, ZooKeeper's record serialisation (`org.apache.jute.BinaryOutputArchive`), as
//! the ZooKeeper protocol documents it: big-endian `int` (4 bytes) and `long` (8), a
//! `boolean` as one byte, a `buffer` or `ustring` as an `int` length (−1 for null) and
//! its bytes, a `vector` as an `int` count (−1 for null) and its elements.
//!
//! [`Reader`] never trusts a length: one larger than what is left is an error, so a
//! hostile or truncated record cannot make it allocate.

use std::fmt;

/// Bytes of a wire or disk format that cannot be decoded: what was being decoded, at
/// which byte, and what was wrong. Shown as `jute record, byte 12: CreateRequest.path:
/// 40 bytes expected, 3 left`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The format being decoded ([`JUTE`], a peer message, a transaction).
    pub format: &'static str,
    /// Byte offset in the bytes given to the decoder.
    pub at: usize,
    /// What was wrong, naming the field.
    pub what: String,
}

/// [`DecodeError::format`] of a jute record.
pub(crate) const JUTE: &str = "jute record";

impl DecodeError {
    /// An error in `format` at byte `at`.
    pub fn new(format: &'static str, at: usize, what: impl Into<String>) -> DecodeError {
        DecodeError {
            format,
            at,
            what: what.into(),
        }
    }

    /// An error in a jute record.
    pub fn jute(at: usize, what: impl Into<String>) -> DecodeError {
        DecodeError::new(JUTE, at, what)
    }

    /// The same error, in bytes that start `n` bytes later in the whole message (a
    /// record read after a tag byte).
    pub fn after(self, n: usize) -> DecodeError {
        DecodeError {
            at: self.at + n,
            ..self
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, byte {}: {}", self.format, self.at, self.what)
    }
}

impl std::error::Error for DecodeError {}

/// Writes jute primitives.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty record.
    pub(crate) fn new() -> Writer {
        Writer::default()
    }

    /// The bytes written.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// A jute `int`.
    pub(crate) fn int(&mut self, v: i32) -> &mut Writer {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A jute `long`.
    pub(crate) fn long(&mut self, v: i64) -> &mut Writer {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A jute `boolean`.
    pub(crate) fn bool(&mut self, v: bool) -> &mut Writer {
        self.buf.push(u8::from(v));
        self
    }

    /// A jute `buffer`.
    pub(crate) fn buffer(&mut self, v: &[u8]) -> &mut Writer {
        self.int(len_i32(v.len()));
        self.buf.extend_from_slice(v);
        self
    }

    /// A jute `ustring`.
    pub(crate) fn string(&mut self, v: &str) -> &mut Writer {
        self.buffer(v.as_bytes())
    }

    /// A `vector<ustring>`.
    pub(crate) fn strings(&mut self, v: &[String]) -> &mut Writer {
        self.int(len_i32(v.len()));
        for s in v {
            self.string(s);
        }
        self
    }
}

fn len_i32(n: usize) -> i32 {
    i32::try_from(n).expect("records are smaller than 2 GiB")
}

/// Reads jute primitives from one record.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Read `buf` from its start.
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, at: 0 }
    }

    fn err(&self, what: impl Into<String>) -> DecodeError {
        DecodeError::jute(self.at, what)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        let left = self.buf.len() - self.at;
        if n > left {
            return Err(self.err(format!("{what}: {n} bytes expected, {left} left")));
        }
        let out = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    /// A jute `int`.
    pub(crate) fn int(&mut self, what: &str) -> Result<i32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes(b.try_into().expect("4 bytes")))
    }

    /// A jute `long`.
    pub(crate) fn long(&mut self, what: &str) -> Result<i64, DecodeError> {
        let b = self.take(8, what)?;
        Ok(i64::from_be_bytes(b.try_into().expect("8 bytes")))
    }

    /// A jute `boolean` (any non-zero byte is true, as `DataInput.readBoolean`).
    pub(crate) fn bool(&mut self, what: &str) -> Result<bool, DecodeError> {
        Ok(self.take(1, what)?[0] != 0)
    }

    /// A jute `buffer`; null reads as empty.
    pub(crate) fn buffer(&mut self, what: &str) -> Result<Vec<u8>, DecodeError> {
        let n = self.int(what)?;
        if n < 0 {
            return Ok(Vec::new());
        }
        Ok(self.take(n as usize, what)?.to_vec())
    }

    /// A jute `ustring`; null reads as empty.
    pub(crate) fn string(&mut self, what: &str) -> Result<String, DecodeError> {
        let at = self.at;
        let bytes = self.buffer(what)?;
        String::from_utf8(bytes).map_err(|_| DecodeError::jute(at, format!("{what}: not UTF-8")))
    }

    /// A `vector<ustring>`; null reads as empty.
    pub(crate) fn strings(&mut self, what: &str) -> Result<Vec<String>, DecodeError> {
        let n = self.int(what)?;
        if n < 0 {
            return Ok(Vec::new());
        }
        // Each element takes at least its 4-byte length.
        if n as usize > self.remaining() / 4 {
            return Err(self.err(format!(
                "{what}: {n} elements cannot fit in {} bytes",
                self.remaining()
            )));
        }
        (0..n).map(|_| self.string(what)).collect()
    }

    /// The record must end here.
    pub(crate) fn end(&self, record: &str) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.err(format!("{record}: {n} bytes after its end"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_round_trip_in_big_endian() {
        let mut w = Writer::new();
        w.int(-2)
            .long(0x0102_0304_0506_0708)
            .bool(true)
            .string("/a")
            .buffer(&[])
            .strings(&["x".into(), "yz".into()]);
        let bytes = w.into_bytes();
        assert_eq!(&bytes[..4], &[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(&bytes[4..12], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&bytes[12..19], &[1, 0, 0, 0, 2, b'/', b'a']);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.int("i").unwrap(), -2);
        assert_eq!(r.long("l").unwrap(), 0x0102_0304_0506_0708);
        assert!(r.bool("b").unwrap());
        assert_eq!(r.string("s").unwrap(), "/a");
        assert_eq!(r.buffer("d").unwrap(), Vec::<u8>::new());
        assert_eq!(r.strings("v").unwrap(), vec!["x", "yz"]);
        r.end("test").unwrap();
    }

    #[test]
    fn nulls_read_as_empty_and_lies_are_errors() {
        let null = (-1i32).to_be_bytes();
        assert_eq!(Reader::new(&null).buffer("d").unwrap(), Vec::<u8>::new());
        assert_eq!(
            Reader::new(&null).strings("v").unwrap(),
            Vec::<String>::new()
        );
        // A length past the end: no allocation, an error naming the field.
        let e = Reader::new(&[0x7f, 0xff, 0xff, 0xff, 1])
            .buffer("data")
            .unwrap_err();
        assert_eq!(e.at, 4, "{e}");
        assert!(e.what.contains("data") && e.what.contains("1 left"), "{e}");
        assert_eq!(
            e.to_string(),
            "jute record, byte 4: data: 2147483647 bytes expected, 1 left"
        );
        let e = Reader::new(&[0x7f, 0xff, 0xff, 0xff])
            .strings("children")
            .unwrap_err();
        assert!(e.what.contains("cannot fit"), "{e}");
        let e = Reader::new(&[0, 0, 0, 1, 0xff]).string("path").unwrap_err();
        assert!(e.what.contains("UTF-8"), "{e}");
        assert!(Reader::new(&[0, 0]).int("xid").is_err());
        let mut r = Reader::new(&[0, 0, 0, 0, 9]);
        r.int("x").unwrap();
        assert!(r.end("rec").unwrap_err().what.contains("1 bytes after"));
    }
}
