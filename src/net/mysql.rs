//! MySQL's client/server protocol (the wire MariaDB and MySQL speak), both sides: the
//! packets, the handshake, `COM_QUERY`'s text protocol and its replies. The database
//! family's server answers real clients (`mariadb`, PyMySQL) with it, and locksim's own
//! client speaks it to the model in simulation and to a real MariaDB.
//!
//! [`QueryResult`] is the vocabulary both sides share: what one statement answered.

mod result;

pub(crate) use result::{
    Column, ColumnType, QueryResult, ServerError, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS,
};
