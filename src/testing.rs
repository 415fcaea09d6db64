//! What locksim's own integration tests reach beyond the public surface: the wire codecs
//! and models they compare with the real servers, a family's model served on loopback,
//! and the node context's plumbing. Hidden and not a stable interface: a user's code
//! goes through [`crate::plugin`] and the crate root.

/// Redis: RESP and the server model (tests/fidelity/redis*.rs, tests/cli/serve.rs).
pub mod redis {
    pub use crate::locks::redis::model::{Block, Client, RedisServer, ServerConfig};
    pub use crate::locks::redis::resp::{decode, encode_command, Value};
}

/// ZooKeeper: jute frames and the tree's types (tests/fidelity/zk.rs), and how a real
/// ZooKeeper is started (tests/support/real_zk.rs).
pub mod zk {
    pub use crate::locks::zk::proto::{
        decode_reply, encode_request, ClientFrame, OpCode, Request, Response, ServerFrame,
        PASSWD_LEN, PING_XID,
    };
    pub use crate::locks::zk::tree::{
        CreateMode, SessionId, Stat, WatchKind, WatchedEvent, ZkError,
    };
    pub use crate::locks::zk::{JVM_FLAGS, LOG4J_CONFIG, LOG4J_JARS, ZOOKEEPER_JAR};
}

/// etcd: its v3 protobuf messages (tests/fidelity/etcd.rs).
pub mod etcd {
    pub use crate::locks::raft::etcdpb::{etcdserverpb, mvccpb, v3lockpb};
}

/// MySQL's wire: locksim's client, the server side's state machine, and the replies
/// (tests/fidelity/mariadb_wire.rs).
pub mod mysql {
    pub use crate::net::mysql::{
        Column, ColumnType, MysqlClient, QueryResult, ServerConn, ServerError, ServerEvent,
        ServerHello, WireError, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS,
    };
}

pub use crate::net::{Deadlines, GrpcChannel};
pub use crate::real::find_binary;
pub use crate::serve::{serve, ServeConfig, ServeFamily};
pub use crate::sim::{Kernel, LiveNet, NodeCtx, NodeState, Traffic, EPOCH_NS};
