//! Redis: the RESP codec, the server model and the lock clients.
pub mod resp;
pub mod server;
