//! MySQL's packets: a 3-byte little-endian payload length, a 1-byte sequence id, then the
//! payload. The sequence id counts the packets of one exchange (a command and its reply,
//! or the handshake) from 0, wrapping at 256.
//!
//! A payload of 16 MiB − 1 bytes or more is split over several packets by MySQL; locksim
//! carries no such payload, so both directions refuse one with a typed error.

use super::error::WireError;

/// The length field's largest value. A packet of exactly this length announces that the
/// payload continues in the next packet (not supported), so a payload carried in one
/// packet is at most one byte shorter.
const LENGTH_CONTINUES: usize = 0xFF_FFFF;

/// The largest payload one packet carries here.
pub(crate) const MAX_PAYLOAD: usize = LENGTH_CONTINUES - 1;

/// One packet: its sequence id and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Packet {
    /// The sequence id.
    pub seq: u8,
    /// The payload.
    pub payload: Vec<u8>,
}

/// Append `payload` as one packet with sequence id `seq` to `out`.
pub(crate) fn encode_packet(seq: u8, payload: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(WireError::PayloadTooLarge { len: payload.len() });
    }
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_le_bytes()[..3]);
    out.push(seq);
    out.extend_from_slice(payload);
    Ok(())
}

/// Cuts packets out of the bytes a connection receives (sans-io: the caller reads the
/// socket and feeds what came).
#[derive(Debug, Default)]
pub(crate) struct PacketDecoder {
    buf: Vec<u8>,
}

impl PacketDecoder {
    /// Append bytes received.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Whether bytes of an incomplete packet are buffered.
    pub(crate) fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }

    /// The next complete packet, `None` until one is buffered. A packet announcing a
    /// multi-packet payload is an error (and the buffer is left as it was: the
    /// connection is to be closed).
    pub(crate) fn next_packet(&mut self) -> Result<Option<Packet>, WireError> {
        let Some(header) = self.buf.get(..4) else {
            return Ok(None);
        };
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        if len == LENGTH_CONTINUES {
            return Err(WireError::MultiPacketPayload);
        }
        let seq = header[3];
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let payload = self.buf[4..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some(Packet { seq, payload }))
    }
}
