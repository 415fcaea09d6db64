//! Lock algorithms: servers and clients.
pub mod redis;
