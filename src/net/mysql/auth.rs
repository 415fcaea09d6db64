//! `mysql_native_password`: the client proves it knows the password without sending it,
//! answering the server's 20-byte scramble with
//! `SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))`.
//!
//! locksim's server is a test server: it accepts every user and password and never checks
//! this answer. locksim's client computes it so that it can log in to a real MariaDB.

/// The plugin's name, as the handshake carries it.
pub(crate) const NATIVE_PASSWORD: &str = "mysql_native_password";

/// The auth response for `password` and the server's `scramble` (empty for an empty
/// password, as MySQL's clients send).
pub(crate) fn native_password_response(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = sha1_smol::Sha1::from(password).digest().bytes();
    let stage2 = sha1_smol::Sha1::from(stage1).digest().bytes();
    let mut mix = sha1_smol::Sha1::new();
    mix.update(scramble);
    mix.update(&stage2);
    let mix = mix.digest().bytes();
    stage1.iter().zip(mix).map(|(a, b)| a ^ b).collect()
}
