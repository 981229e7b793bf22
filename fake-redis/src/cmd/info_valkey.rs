//! `INFO` as valkey-server 9.1.2 prints it: its sixteen sections, each field under the name and
//! in the place Valkey gives it, so a client that reads Valkey's fields finds every one.
//!
//! Valkey prints more than Redis 7.0: a `# TLS`, `# Cluster Info` and `# Scripting Engines`
//! section (in `all` and `everything`, not in the default set), and fields about its I/O
//! threads, allocator, event loop and replication buffers. A value is the fake's own where the
//! fake keeps the figure (clients, blocked and watching clients, pauses, keyspace hits and
//! misses, expired and evicted keys, pub/sub counts, replication, the command, error and latency
//! statistics, the keyspace). Where a field describes the process or machine a real server is
//! and the fake is not, its value is fixed and says "nothing happened": no fork ran (`0`, and
//! `-1` for the times Valkey prints as `-1` before a first run), no allocator overhead (ratios
//! `1.00`, byte counts `0`), no TLS certificate (`none`), no I/O thread, no network byte, read or event-loop cycle
//! counted (the engine sees commands, not sockets), no CPU time (every command takes 0 µs on
//! the fake's frozen clock). The memory figures are the fake's estimate (`engine/memory.rs`);
//! the Lua and script memory figures are those of a fresh valkey-server 9.1.2. The version
//! fields are Valkey's own: `redis_version` stays the Redis release Valkey forked from (7.2.4).

use super::{CmdResult, Cx};
use crate::engine::Engine;
use crate::engine::pause::PauseMode;
use crate::resp::Frame;
use std::fmt::Write as _;

/// A section's key (what `INFO <section>` names), its title, and whether the default set has it.
const SECTIONS: [(&str, &str, bool); 16] = [
    ("server", "Server", true),
    ("tls", "TLS", false),
    ("clients", "Clients", true),
    ("memory", "Memory", true),
    ("persistence", "Persistence", true),
    ("stats", "Stats", true),
    ("replication", "Replication", true),
    ("cpu", "CPU", true),
    ("modules", "Modules", true),
    ("commandstats", "Commandstats", false),
    ("errorstats", "Errorstats", true),
    ("latencystats", "Latencystats", false),
    ("cluster", "Cluster", true),
    ("cluster_info", "Cluster Info", false),
    ("scriptingengines", "Scripting Engines", false),
    ("keyspace", "Keyspace", true),
];

/// The memory Valkey 9.1.2's Lua engine reports before any script ran: its eval VM, its
/// functions VM, and the engine's own overhead.
const LUA_EVAL_VM: u64 = 33_792;
const LUA_FUNCTIONS_VM: u64 = 35_840;
const LUA_OVERHEAD: u64 = 56;

/// `INFO [section…]` in Valkey's layout: `wanted` are the lowercase section names asked for.
pub(super) fn info(cx: &mut Cx<'_>, wanted: &[String]) -> CmdResult {
    let all = wanted.iter().any(|w| w == "all" || w == "everything");
    let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
    let want = |key: &str, in_default: bool| {
        all || (default && in_default) || wanted.iter().any(|w| w == key)
    };
    let used_memory = match want("memory", true) {
        true => cx.node().used_memory(),
        false => 0,
    };
    let now = cx.now;
    let engine = cx.engine();
    let mut sections = Vec::new();
    for (key, title, in_default) in SECTIONS {
        if !want(key, in_default) {
            continue;
        }
        let mut s = format!("# {title}\r\n");
        match key {
            "server" => server(&mut s, engine, now),
            "tls" => tls(&mut s),
            "clients" => clients(&mut s, engine, now),
            "memory" => memory(&mut s, engine, used_memory),
            "persistence" => persistence(&mut s, engine),
            "stats" => stats(&mut s, engine),
            "replication" => s = engine.replication_info(true),
            "cpu" => s.push_str(
                "used_cpu_sys:0.000000\r\nused_cpu_user:0.000000\r\n\
                 used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n\
                 used_cpu_sys_main_thread:0.000000\r\nused_cpu_user_main_thread:0.000000\r\n\
                 used_active_time_main_thread:0.000000\r\n",
            ),
            "modules" => s.push_str(
                "module:name=lua,ver=1,api=1,filters=0,usedby=[],using=[],\
                 options=[handle-repl-async-load|handle-atomic-slot-migration]\r\n",
            ),
            "commandstats" => s = engine.stats().commandstats_section(),
            "errorstats" => s = engine.stats().errorstats_section(),
            "latencystats" => s = super::server::latencystats_section(engine),
            "cluster" => {
                let _ = write!(
                    s,
                    "cluster_enabled:{}\r\n",
                    u8::from(engine.is_cluster_node())
                );
            }
            "scriptingengines" => {
                let _ = write!(
                    s,
                    "engines_count:1\r\nengines_total_used_memory:{vm}\r\n\
                     engines_total_memory_overhead:{LUA_OVERHEAD}\r\n\
                     engine_0:name=LUA,module=lua,abi_version=4,used_memory={vm},\
                     memory_overhead={LUA_OVERHEAD}\r\n",
                    vm = LUA_EVAL_VM + LUA_FUNCTIONS_VM
                );
            }
            "keyspace" => keyspace(&mut s, engine),
            // `cluster_info`: empty on a server that is no cluster node.
            _ => {}
        }
        sections.push(s);
    }
    Ok(Frame::text(sections.join("\r\n")))
}

fn server(s: &mut String, engine: &Engine, now: i64) {
    let version = engine.version();
    let uptime = (now - engine.started_at()).max(0) / 1000;
    let mode = match engine.is_cluster_node() {
        true => "cluster",
        false => "standalone",
    };
    let _ = write!(
        s,
        "redis_version:{}\r\nserver_name:{}\r\nvalkey_version:{}\r\nvalkey_release_stage:ga\r\n\
         redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\n\
         server_mode:{mode}\r\nos:fake-redis (in-process)\r\narch_bits:64\r\n\
         monotonic_clock:fake-redis engine clock\r\nmultiplexing_api:epoll\r\n\
         gcc_version:0.0.0\r\nprocess_id:1\r\nprocess_supervised:no\r\n\
         run_id:{:040x}\r\ntcp_port:6379\r\nserver_time_usec:{}\r\n\
         uptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:10\r\nconfigured_hz:10\r\n\
         clients_hz:10\r\nlru_clock:{}\r\nexecutable:\r\nconfig_file:\r\n\
         io_threads_active:0\r\navailability_zone:\r\n\
         listener0:name=tcp,bind=127.0.0.1,port=6379\r\n",
        version.redis_version(),
        version.server_name(),
        version.server_version(),
        engine.started_at(),
        now.saturating_mul(1000),
        uptime / 86_400,
        (now / 1000) & ((1 << 24) - 1)
    );
}

fn tls(s: &mut String) {
    for end in ["server", "client", "ca"] {
        let _ = write!(
            s,
            "tls_{end}_cert_serial:none\r\ntls_{end}_cert_expires_in_seconds:0\r\n"
        );
    }
}

fn clients(s: &mut String, engine: &Engine, now: i64) {
    let (mut pubsub, mut watching, mut watched, mut timeouts) = (0, 0, 0, 0);
    for (id, c) in engine.clients() {
        let client = crate::engine::ClientId(id);
        timeouts +=
            usize::from(engine.is_blocked(client) && engine.block_deadline(client).is_some());
        let subscribed =
            c.subscriptions() > 0 || c.subscription_count(crate::engine::Subscription::Shard) > 0;
        pubsub += usize::from(subscribed);
        watching += usize::from(c.watch_count() > 0);
        watched += c.watch_count();
    }
    let (reason, actions, left) = match engine.pause_at(now) {
        None => ("none", "none", 0),
        Some(p) => {
            let actions = match p.mode {
                PauseMode::Write => "write",
                PauseMode::All => "all",
            };
            ("client_pause", actions, (p.until - now).max(0))
        }
    };
    let blocked = engine.blocked_clients();
    let _ = write!(
        s,
        "connected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\n\
         client_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\n\
         blocked_clients:{blocked}\r\ntracking_clients:{}\r\npubsub_clients:{pubsub}\r\n\
         watching_clients:{watching}\r\nclients_in_timeout_table:{timeouts}\r\n\
         total_watched_keys:{watched}\r\ntotal_blocking_keys:0\r\n\
         total_blocking_keys_on_nokey:0\r\npaused_reason:{reason}\r\n\
         paused_actions:{actions}\r\npaused_timeout_milliseconds:{left}\r\n",
        engine.client_count(),
        engine.client_limit().maxclients(),
        engine.tracking_clients()
    );
}

fn memory(s: &mut String, engine: &Engine, used: u64) {
    let startup = crate::engine::memory::STARTUP;
    let dataset = used.saturating_sub(startup);
    let maxmemory = engine.maxmemory();
    let policy = engine
        .config()
        .settings
        .get("maxmemory-policy")
        .map_or("noeviction", String::as_str);
    let human = super::connection::human_bytes;
    let percent = |part: u64, whole: u64| match whole {
        0 => 0.0,
        _ => part as f64 * 100.0 / whole as f64,
    };
    let vm = LUA_EVAL_VM + LUA_FUNCTIONS_VM;
    let _ = write!(
        s,
        "used_memory:{used}\r\nused_memory_human:{h}\r\nused_memory_rss:{used}\r\n\
         used_memory_rss_human:{h}\r\nused_memory_peak:{used}\r\nused_memory_peak_human:{h}\r\n\
         used_memory_peak_perc:100.00%\r\nused_memory_overhead:{startup}\r\n\
         used_memory_startup:{startup}\r\nused_memory_dataset:{dataset}\r\n\
         used_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{used}\r\n\
         allocator_active:{used}\r\nallocator_resident:{used}\r\nallocator_muzzy:0\r\n\
         total_system_memory:0\r\ntotal_system_memory_human:0B\r\n\
         used_memory_lua:{LUA_EVAL_VM}\r\nused_memory_vm_eval:{LUA_EVAL_VM}\r\n\
         used_memory_lua_human:{}\r\nused_memory_scripts_eval:0\r\n\
         number_of_cached_scripts:0\r\nnumber_of_functions:0\r\nnumber_of_libraries:0\r\n\
         used_memory_vm_functions:{LUA_FUNCTIONS_VM}\r\nused_memory_vm_total:{vm}\r\n\
         used_memory_vm_total_human:{}\r\nused_memory_functions:0\r\nused_memory_scripts:0\r\n\
         used_memory_scripts_human:0B\r\nmaxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\n\
         maxmemory_policy:{policy}\r\nallocator_frag_ratio:1.00\r\nallocator_frag_bytes:0\r\n\
         allocator_rss_ratio:1.00\r\nallocator_rss_bytes:0\r\nrss_overhead_ratio:1.00\r\n\
         rss_overhead_bytes:0\r\nmem_fragmentation_ratio:1.00\r\nmem_fragmentation_bytes:0\r\n\
         mem_not_counted_for_evict:0\r\nmem_replication_backlog:0\r\n\
         mem_total_replication_buffers:0\r\nmem_replicas_repl_buffer:0\r\n\
         mem_clients_slaves:0\r\nmem_clients_normal:0\r\nmem_cluster_links:0\r\n\
         mem_cluster_slot_import:0\r\nmem_cluster_slot_export:0\r\nmem_aof_buffer:0\r\n\
         mem_allocator:libc\r\nmem_overhead_db_hashtable_rehashing:0\r\n\
         active_defrag_running:0\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
        percent(dataset, used.saturating_sub(startup).max(1)).min(100.0),
        human(LUA_EVAL_VM),
        human(vm),
        human(maxmemory),
        h = human(used),
    );
}

fn persistence(s: &mut String, engine: &Engine) {
    let aof = u8::from(engine.config().appendonly());
    let _ = write!(
        s,
        "loading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\n\
         current_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\n\
         current_save_keys_total:0\r\nrdb_changes_since_last_save:0\r\n\
         rdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\n\
         rdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\n\
         rdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\n\
         aof_enabled:{aof}\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\n\
         aof_last_rewrite_time_sec:-1\r\naof_current_rewrite_time_sec:-1\r\n\
         aof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\n\
         aof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\n\
         aof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n\
         slot_migration_fork_in_progress:0\r\n",
        engine.started_at() / 1000
    );
}

fn stats(s: &mut String, engine: &Engine) {
    let expired: u64 = engine.dbs().iter().map(|d| d.stats.expired_keys).sum();
    let evicted: u64 = engine.dbs().iter().map(|d| d.stats.evicted_keys).sum();
    let st = engine.stats();
    let (stale, cap_reached) = engine.expiry_stats();
    let _ = write!(
        s,
        "total_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
         instantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:0\r\ntotal_net_output_bytes:0\r\n\
         total_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\n\
         total_net_cluster_slot_import_bytes:0\r\ntotal_net_cluster_slot_export_bytes:0\r\n\
         instantaneous_input_kbps:0.00\r\ninstantaneous_output_kbps:0.00\r\n\
         instantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\n\
         rejected_connections:{}\r\nsync_full:0\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\n\
         expired_keys:{expired}\r\nexpired_fields:0\r\nexpired_stale_perc:{:.2}\r\n\
         expired_keys_with_volatile_items_stale_perc:0.00\r\n\
         expired_time_cap_reached_count:{cap_reached}\r\nexpire_cycle_cpu_milliseconds:0\r\n\
         evicted_keys:{evicted}\r\nevicted_clients:0\r\nevicted_scripts:0\r\n\
         total_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\n\
         keyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\n\
         pubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\n\
         migrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\n\
         active_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\n\
         total_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\n\
         tracking_total_keys:0\r\ntracking_total_items:0\r\ntracking_total_prefixes:0\r\n\
         unexpected_error_replies:0\r\ntotal_error_replies:{}\r\n\
         dump_payload_sanitizations:0\r\ntotal_reads_processed:0\r\n\
         total_writes_processed:0\r\nio_threaded_reads_processed:0\r\n\
         io_threaded_writes_processed:0\r\nio_threaded_freed_objects:0\r\n\
         io_threaded_accept_processed:0\r\nio_threaded_poll_processed:0\r\n\
         io_threaded_total_prefetch_batches:0\r\nio_threaded_total_prefetch_entries:0\r\n\
         client_query_buffer_limit_disconnections:0\r\n\
         client_output_buffer_limit_disconnections:0\r\nreply_buffer_shrinks:0\r\n\
         reply_buffer_expands:0\r\neventloop_cycles:0\r\neventloop_duration_sum:0\r\n\
         eventloop_duration_cmd_sum:0\r\ninstantaneous_eventloop_cycles_per_sec:0\r\n\
         instantaneous_eventloop_duration_usec:0\r\nacl_access_denied_auth:0\r\n\
         acl_access_denied_cmd:0\r\nacl_access_denied_key:0\r\nacl_access_denied_channel:0\r\n\
         acl_access_denied_tls_cert:0\r\nacl_access_denied_db:0\r\n",
        st.connections,
        st.commands,
        st.ops.per_second(),
        engine.client_limit().rejected(),
        stale * 100.0,
        st.keyspace_hits,
        st.keyspace_misses,
        engine.channel_count(),
        engine.pattern_count(),
        engine.shard_channel_count(),
        st.error_replies,
    );
}

fn keyspace(s: &mut String, engine: &Engine) {
    for (i, db) in engine.dbs().iter().enumerate() {
        if db.len() == 0 {
            continue;
        }
        // Valkey counts the keys with fields that have a TTL (its hashes').
        let volatile_items = db
            .stored_iter()
            .filter(|(_, e)| matches!(&e.value, crate::engine::db::Value::Hash(h) if h.has_field_ttls()))
            .count();
        let _ = write!(
            s,
            "db{i}:keys={},expires={},avg_ttl=0,keys_with_volatile_items={volatile_items}\r\n",
            db.len(),
            db.volatile_len()
        );
    }
}
