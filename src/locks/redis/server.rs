//! The Redis server model (a pure state machine).
