//! RESP2 codec.
