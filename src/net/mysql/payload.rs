//! The fields inside a packet's payload: little-endian fixed-size integers,
//! length-encoded integers and strings, NUL-terminated strings. [`Reader`] reads them
//! with a typed error when the payload ends early; the `put_*` functions write them.

use super::error::WireError;

/// Reads a payload's fields front to back.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Whether every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The next byte, not consumed.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(
        &mut self,
        n: usize,
        expected: &'static str,
    ) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or(WireError::Malformed { expected })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos.min(self.buf.len())..];
        self.pos = self.buf.len();
        out
    }

    /// A byte.
    pub(crate) fn u8(&mut self, expected: &'static str) -> Result<u8, WireError> {
        Ok(self.bytes(1, expected)?[0])
    }

    /// A little-endian `u16`.
    pub(crate) fn u16(&mut self, expected: &'static str) -> Result<u16, WireError> {
        let b = self.bytes(2, expected)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, expected: &'static str) -> Result<u32, WireError> {
        let b = self.bytes(4, expected)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length-encoded integer: one byte below 0xFB, or 0xFC/0xFD/0xFE followed by 2, 3
    /// or 8 bytes. 0xFB (NULL) and 0xFF (an ERR packet's marker) are not integers.
    pub(crate) fn lenenc_int(&mut self, expected: &'static str) -> Result<u64, WireError> {
        let width = match self.u8(expected)? {
            b @ 0..=0xFA => return Ok(u64::from(b)),
            0xFC => 2,
            0xFD => 3,
            0xFE => 8,
            _ => return Err(WireError::Malformed { expected }),
        };
        let b = self.bytes(width, expected)?;
        Ok(b.iter().rev().fold(0, |acc, &x| acc << 8 | u64::from(x)))
    }

    /// A length-encoded string's bytes.
    pub(crate) fn lenenc_bytes(&mut self, expected: &'static str) -> Result<&'a [u8], WireError> {
        let len = self.lenenc_int(expected)?;
        let len = usize::try_from(len).map_err(|_| WireError::Malformed { expected })?;
        self.bytes(len, expected)
    }

    /// A length-encoded string, as text (invalid UTF-8 replaced).
    pub(crate) fn lenenc_str(&mut self, expected: &'static str) -> Result<String, WireError> {
        Ok(String::from_utf8_lossy(self.lenenc_bytes(expected)?).into_owned())
    }

    /// A NUL-terminated string's bytes (the NUL consumed, not returned).
    pub(crate) fn nul_bytes(&mut self, expected: &'static str) -> Result<&'a [u8], WireError> {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        let nul = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(WireError::Malformed { expected })?;
        self.pos += nul + 1;
        Ok(&rest[..nul])
    }

    /// A NUL-terminated string, as text (invalid UTF-8 replaced).
    pub(crate) fn nul_str(&mut self, expected: &'static str) -> Result<String, WireError> {
        Ok(String::from_utf8_lossy(self.nul_bytes(expected)?).into_owned())
    }
}

/// Append a length-encoded integer.
pub(crate) fn put_lenenc_int(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0xFA => out.push(v as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Append a length-encoded string.
pub(crate) fn put_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Append a NUL-terminated string.
pub(crate) fn put_nul_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
}
