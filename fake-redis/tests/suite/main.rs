//! fake-redis's integration tests, one module per subject, in one test binary (`--test suite`):
//! one link of tokio, the redis crate and the engine instead of one per file, which was most of
//! the workspace's test build. A test that needs a process of its own stays a file of its own
//! beside this directory: `server_connections.rs` reads the process's memory high-water mark, and
//! `server_binary.rs` needs the `server-bin` feature.

#[path = "../support/mod.rs"]
mod support;

mod admin_access;
mod admin_acl;
mod admin_client;
mod admin_config;
mod admin_dispatch;
mod admin_fake;
mod admin_info;
mod admin_notify;
mod admin_server;
mod admin_stats;
mod adversarial_readers;
mod adversarial_wire;
mod blocking;
mod blocking_server;
mod blocking_streams;
mod blocking_streams_vs_redis;
mod blocking_vs_redis;
mod busy_vs_redis;
mod cluster_engine;
mod cluster_server;
mod cluster_stubs;
mod cluster_vs_redis;
mod collections_at_scale;
mod conformance_blocking;
mod conformance_sequences;
mod conformance_table;
mod conformance_wire;
mod connection;
mod connection_modes;
mod debug_command;
mod dump;
mod engine;
mod expiry_cycles;
mod faults;
mod fixture;
mod geo;
mod hash_ttl;
mod hyperloglog;
mod info;
mod layering;
mod lua_busy;
mod lua_functions;
mod lua_runaway;
mod lua_scripts;
mod maxmemory;
mod notify_events;
mod repl_stream;
mod replica_elsewhere;
mod replicas;
mod script_handles;
mod sentinel;
mod server;
mod server_bytes;
mod server_cli;
mod sharded_pubsub;
mod streams;
mod tracking_7_4;
mod valkey_commands;
mod valkey_info;
mod versions;
mod versions_7_4;
mod versions_acl;
mod versions_dump;
mod versions_types;
mod vs_redis;
mod wall_clock;
mod wire;
