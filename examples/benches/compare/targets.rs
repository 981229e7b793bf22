//! What the `compare` benchmark's report says: the targets of issue 9 with what each means for a
//! user and why it is missed when it is, and the table's rows (each figure's label, unit and
//! decimals). The report's writer is `report.rs`; this is its content.

use super::report::{Bound, Target};

const WHY_CLIENT_OVERHEAD: &str = "Both sides make the same two EVALSHA round trips, so the \
    gap (the 'extra wall time per pair' row) is the lock client's own work and the scheduling it \
    causes. Its cost with no I/O at all is the criterion row 'LockClient pair over an instant \
    backend' (the machine's share: the machine rows, four inputs per pair). A caller steps the \
    machine under the client's mutex and polls its own call in its own task, with no channel, no \
    spawned task and one timeout, and no second task woken: a new hold's end, a deadline for the \
    driver's timer, is set on that timer by the caller's own step (`lock-core/src/client/state.rs`). \
    Before that, the driver task was woken once for every lock taken, and on a multi-thread \
    runtime tokio woke the second worker for it: on the Intel Xeon KVM guest of 2026-12-03, \
    `strace -f -c` over 30,000 pairs counted 3.5 futex calls and 0.5 eventfd writes a pair for \
    ours against none for raw, and ours / raw was 0.56 to 0.69; with the caller setting the \
    timer, 27 futex calls and no eventfd write in all, and 0.88 in the same conditions. What is \
    left is work rather than hops: the machine's own steps (its maps of holds, operations, calls \
    and timers, about a quarter of the client's instructions per pair under callgrind), the \
    guard's status channel, and the one timeout per call (RedisBackend's), which the raw side \
    does not pay. Where the lock-core owners could go next: one timer shared by every call in \
    flight (their deadlines come in order, all one response timeout apart), and the machine's \
    per-operation maps made lighter.";

const WHY_SCRIPT_COST: &str = "rslock's pair is a plain SET NX PX and a two-command \
    compare-and-delete script; ours runs two scripts that also check and write a latch key \
    (EXISTS, HINCRBY, PEXPIRE, SET PX, and DEL + PUBLISH on release) for idempotent retries, \
    Redisson's reentrancy and the unlock message. The server-CPU-per-pair rows (redis-server's \
    own CPU time, from INFO cpu) show what that costs on the server: it is why even our scripts \
    sent by hand (the raw rows) are slower than rslock, and the lock client's overhead (the ours \
    / raw ratio) comes on top.";

const WHY_ENGINE_PAIR: &str = "The engine's share of a pair is counted in instructions, \
    which repeat on any machine where times do not: {cg_engine_pair_instr} a pair inside \
    `Engine::execute` in this run (callgrind over `fake-redis/examples/engine_pairs.rs`, whose \
    header gives the commands; 11,490 before this work; the keyspace's index of slot numbers, \
    which halved the memory of 1M lock keys, costs about 500 of them). At the rate this machine \
    ran them in the 1 ms row ({cg_engine_rate_g} G instructions a second), 2 M pairs/s would \
    allow {cg_engine_pair_needed} a pair, fewer than the two native scripts' own calls took when \
    last profiled (6,351). BENCHMARKS.md's section on the engine gives where they go: each \
    EVALSHA is parsed, its script found by SHA, and its twin runs four to six commands, each a \
    probe of the keyspace's table (a cache miss at 20,000 live keys, which the 20 ms row shows by \
    having fewer), an allocation for a new key and its value, the latch's expiry candidate, and \
    the notification and statistics bookkeeping every Redis command does.";

pub(crate) const TARGETS: &[Target] = &[
    Target {
        what: "uncontended pairs/s, ours / raw EVALSHA, multi-thread runtime",
        paired: Some("unc_mt_ours_over_raw"),
        numerator: "unc_mt_ours_pairs_s",
        denominator: "unc_mt_raw_pairs_s",
        bound: 0.95,
        kind: Bound::AtLeast,
        meaning: "what the lock client (its machine, the machine's mutex, the call's timeout) costs over sending its two scripts by hand, under `#[tokio::main]`",
        why_missed: WHY_CLIENT_OVERHEAD,
    },
    Target {
        what: "uncontended pairs/s, ours / raw EVALSHA, current-thread runtime",
        paired: Some("unc_ct_ours_over_raw"),
        numerator: "unc_ct_ours_pairs_s",
        denominator: "unc_ct_raw_pairs_s",
        bound: 0.95,
        kind: Bound::AtLeast,
        meaning: "the same on one thread (`#[tokio::test]`, small tools)",
        why_missed: WHY_CLIENT_OVERHEAD,
    },
    Target {
        what: "uncontended pairs/s, ours / rslock, multi-thread runtime",
        paired: Some("unc_mt_ours_over_rslock"),
        numerator: "unc_mt_ours_pairs_s",
        denominator: "unc_mt_rslock_pairs_s",
        bound: 0.9,
        kind: Bound::AtLeast,
        meaning: "a reentrant, watchdog-capable, idempotent lock against a plain SET NX lock, when nobody contends",
        why_missed: WHY_SCRIPT_COST,
    },
    Target {
        what: "uncontended pairs/s, ours / rslock, current-thread runtime",
        paired: Some("unc_ct_ours_over_rslock"),
        numerator: "unc_ct_ours_pairs_s",
        denominator: "unc_ct_rslock_pairs_s",
        bound: 0.9,
        kind: Bound::AtLeast,
        meaning: "the same on one thread",
        why_missed: WHY_SCRIPT_COST,
    },
    Target {
        what: "grants/s on 10 locks, ours / rslock",
        paired: None,
        numerator: "c10_ours_grants_s",
        denominator: "c10_rslock_grants_s",
        bound: 2.0,
        kind: Bound::AtLeast,
        meaning: "under contention, waking the next waiter by pub/sub keeps a lock busy; retrying after a sleep leaves it idle",
        why_missed: "rslock's figure is not only sleeping waiters: a task that has just released \
            picks another lock at random and tries it at once, and with 10 locks that fresh try \
            often finds one free (its median wait is near zero; its p90 and p99 are the sleepers). \
            Ours hands a lock over through the release, the PUBLISH, the subscriber connection, \
            the driver and a new acquire round trip, each with the client overhead described for \
            the uncontended ratio, and a woken waiter can still lose to a fresh try (the lock is \
            not fair, as Redisson's is not). The client CPU per grant row shows the cost.",
    },
    Target {
        what: "acquire p99 on 10 locks, ours / rslock",
        paired: None,
        numerator: "c10_ours_p99_us",
        denominator: "c10_rslock_p99_us",
        bound: 1.0,
        kind: Bound::Below,
        meaning: "the slowest waits a contended caller sees",
        why_missed: "see the grants/s ratio above.",
    },
    Target {
        what: "client CPU per pair, ours / raw EVALSHA, multi-thread runtime",
        paired: None,
        numerator: "unc_mt_ours_cpu_us",
        denominator: "unc_mt_raw_cpu_us",
        bound: 1.2,
        kind: Bound::AtMost,
        meaning: "what a service pays in CPU for the lock client's safety over hand-sent scripts",
        why_missed: WHY_CLIENT_OVERHEAD,
    },
    Target {
        what: "acquire p99 / p50 on 10 locks, ours",
        paired: None,
        numerator: "c10_ours_p99_us",
        denominator: "c10_ours_p50_us",
        bound: 5.0,
        kind: Bound::AtMost,
        meaning: "how much longer the unluckiest contended callers wait than the typical one",
        why_missed: "The lock is not fair, as Redisson's RLock is not: an unlock wakes the \
            waiters by its message, and their new attempts race with tasks that ask for the lock \
            for the first time, which need no message and no wake-up and so usually win. A waiter \
            that loses waits for the next unlock, and one that loses several times in a row makes \
            the tail. A fair wait (`Acquire::fair`, Redisson's RFairLock) serves waiters in order: \
            its rows in the same run show the tail that a queue gives instead, the remedy a user \
            who needs a short tail can choose.",
    },
    Target {
        what: "engine-direct acquire+release pairs/s, about 20,000 live latch keys, in millions",
        paired: None,
        numerator: "crit_lock_pair_native_s",
        denominator: "one_million",
        bound: 2.0,
        kind: Bound::AtLeast,
        meaning: "how many lock operations a test on the in-process fake can run per second",
        why_missed: WHY_ENGINE_PAIR,
    },
    Target {
        what: "engine-direct acquire+release pairs/s, about 1,000 live latch keys, in millions",
        paired: None,
        numerator: "crit_lock_pair_native_20ms_s",
        denominator: "one_million",
        bound: 3.0,
        kind: Bound::AtLeast,
        meaning: "the same with a keyspace that fits in the cache",
        why_missed: WHY_ENGINE_PAIR,
    },
    Target {
        what: "simulator events/s, one node, in millions",
        paired: None,
        numerator: "sim_events_s",
        denominator: "one_million",
        bound: 3.0,
        kind: Bound::AtLeast,
        meaning: "how many cases a property test can run in its time",
        why_missed: "Counted in instructions: {cg_sim_event_instr} an event on one node in this \
            run (callgrind; BENCHMARKS.md's simulator section gives where they go: about 1,800 in \
            the lock's machine, formatting the owner, keys and numbers of each attempt, and its \
            calls, and about 1,900 in the engine, the scripts, when last profiled). At the rate \
            this machine ran them ({cg_sim_rate_g} G instructions a second), 3 M events/s would \
            allow {cg_sim_event_needed} per event in all: less than the machine and the engine \
            take together before the simulator does anything. The simulator's own share (about \
            2,800, down from 3,700) is delivering messages and timers, checking subscribers' \
            outboxes after each publishing call, and the checkers' records.",
    },
    Target {
        what: "test workload time, loopback Redis / fake",
        paired: None,
        numerator: "wl_redis_ms",
        denominator: "wl_fake_ms",
        bound: 50.0,
        kind: Bound::AtLeast,
        meaning: "how much faster a test runs in-process than against a local redis-server",
        why_missed: "Loopback Redis is fast here (its commands part, divided by 1,000, is the round \
            trip). The fake's plain commands cost about a microsecond each through \
            FakeConnection, several times the engine's own cost (the two criterion GET rows: \
            argument copying, the link's fault-plan check and engine-lock round trips, converting \
            the reply); the lock cycles are further from 50x because each cycle goes through the \
            lock client and its machine (the 'LockClient pair over an instant backend' row) and makes \
            two script calls, each several commands inside the engine. The \
            commands part and the lock-cycles part are listed separately for both sides.",
    },
    Target {
        what: "memory of 1M lock keys, fake peak RSS / Redis used_memory_rss",
        paired: None,
        numerator: "mem_fake_peak_rss_bytes",
        denominator: "mem_redis_used_memory_rss_bytes",
        bound: 2.0,
        kind: Bound::AtMost,
        meaning: "how large a keyspace a test can hold in the fake compared with a real server",
        why_missed: "Redis keeps a one-field hash as one listpack allocation, the key as an sds \
            string and one entry in each of its two dicts. The fake keeps a small hash packed in \
            one allocation too, but each key sits in an 88-byte slot of its hash table (a 24-byte \
            key, inline up to 22 bytes and otherwise one allocation of its exact size; its hash; \
            and an Entry, whose size row shows a Value and a deadline), in a table that keeps at \
            most 7/8 of its slots full and doubles, so 1M keys sit in 2^21 slots, about 185 MB \
            before any per-key allocation, and a 16-byte expiry candidate per key with a TTL. The \
            peak is above the steady size because the old and the new table coexist while the \
            table grows. For the fake-redis owners: slots that hold an index into a vector of \
            entries, so the table's empty slots cost a few bytes and growing it copies no entry.",
    },
];

/// A figure's row: key, label, unit, and how many decimals to show.
pub(crate) const ROWS: &[(&str, &str, &str, usize)] = &[
    (
        "unc_mt_ours_pairs_s",
        "uncontended, multi-thread rt: ours (LockClient over RedisBackend)",
        "pairs/s",
        0,
    ),
    (
        "unc_mt_raw_pairs_s",
        "uncontended, multi-thread rt: raw EVALSHA (ConnectionManager)",
        "pairs/s",
        0,
    ),
    (
        "unc_mt_raw_mux_pairs_s",
        "uncontended, multi-thread rt: raw EVALSHA (MultiplexedConnection)",
        "pairs/s",
        0,
    ),
    (
        "unc_mt_rslock_pairs_s",
        "uncontended, multi-thread rt: rslock lock + unlock",
        "pairs/s",
        0,
    ),
    (
        "unc_mt_gap_us",
        "uncontended, multi-thread rt: extra wall time per pair, ours − raw",
        "µs",
        1,
    ),
    (
        "unc_mt_ours_cpu_us",
        "uncontended, multi-thread rt: client CPU per pair, ours",
        "µs",
        1,
    ),
    (
        "unc_mt_raw_cpu_us",
        "uncontended, multi-thread rt: client CPU per pair, raw",
        "µs",
        1,
    ),
    (
        "unc_mt_rslock_cpu_us",
        "uncontended, multi-thread rt: client CPU per pair, rslock",
        "µs",
        1,
    ),
    (
        "unc_mt_ours_server_us",
        "uncontended, multi-thread rt: server CPU per pair, ours",
        "µs",
        1,
    ),
    (
        "unc_mt_raw_server_us",
        "uncontended, multi-thread rt: server CPU per pair, raw",
        "µs",
        1,
    ),
    (
        "unc_mt_rslock_server_us",
        "uncontended, multi-thread rt: server CPU per pair, rslock",
        "µs",
        1,
    ),
    (
        "unc_ct_ours_pairs_s",
        "uncontended, current-thread rt: ours",
        "pairs/s",
        0,
    ),
    (
        "unc_ct_raw_pairs_s",
        "uncontended, current-thread rt: raw EVALSHA (ConnectionManager)",
        "pairs/s",
        0,
    ),
    (
        "unc_ct_raw_mux_pairs_s",
        "uncontended, current-thread rt: raw EVALSHA (MultiplexedConnection)",
        "pairs/s",
        0,
    ),
    (
        "unc_ct_rslock_pairs_s",
        "uncontended, current-thread rt: rslock",
        "pairs/s",
        0,
    ),
    (
        "unc_ct_gap_us",
        "uncontended, current-thread rt: extra wall time per pair, ours − raw",
        "µs",
        1,
    ),
    (
        "unc_ct_ours_cpu_us",
        "uncontended, current-thread rt: client CPU per pair, ours",
        "µs",
        1,
    ),
    (
        "unc_ct_raw_cpu_us",
        "uncontended, current-thread rt: client CPU per pair, raw",
        "µs",
        1,
    ),
    (
        "unc_ct_rslock_cpu_us",
        "uncontended, current-thread rt: client CPU per pair, rslock",
        "µs",
        1,
    ),
    (
        "unc_ct_ours_server_us",
        "uncontended, current-thread rt: server CPU per pair, ours",
        "µs",
        1,
    ),
    (
        "unc_ct_raw_server_us",
        "uncontended, current-thread rt: server CPU per pair, raw",
        "µs",
        1,
    ),
    (
        "unc_ct_rslock_server_us",
        "uncontended, current-thread rt: server CPU per pair, rslock",
        "µs",
        1,
    ),
    (
        "c10_ours_grants_s",
        "50 tasks / 10 locks, ours",
        "grants/s",
        0,
    ),
    (
        "c10_ours_p50_us",
        "50 tasks / 10 locks, ours, acquire p50",
        "µs",
        0,
    ),
    (
        "c10_ours_p99_us",
        "50 tasks / 10 locks, ours, acquire p99",
        "µs",
        0,
    ),
    (
        "c10_ours_cpu_us",
        "50 tasks / 10 locks, ours, client CPU per grant",
        "µs",
        0,
    ),
    (
        "c10_fair_grants_s",
        "50 tasks / 10 locks, ours with a fair wait",
        "grants/s",
        0,
    ),
    (
        "c10_fair_p50_us",
        "50 tasks / 10 locks, ours with a fair wait, acquire p50",
        "µs",
        0,
    ),
    (
        "c10_fair_p99_us",
        "50 tasks / 10 locks, ours with a fair wait, acquire p99",
        "µs",
        0,
    ),
    (
        "c10_rslock_grants_s",
        "50 tasks / 10 locks, rslock",
        "grants/s",
        0,
    ),
    (
        "c10_rslock_p50_us",
        "50 tasks / 10 locks, rslock, acquire p50",
        "µs",
        0,
    ),
    (
        "c10_rslock_p99_us",
        "50 tasks / 10 locks, rslock, acquire p99",
        "µs",
        0,
    ),
    (
        "c10_rslock_cpu_us",
        "50 tasks / 10 locks, rslock, client CPU per grant",
        "µs",
        0,
    ),
    (
        "c1000_ours_grants_s",
        "50 tasks / 1,000 locks, ours",
        "grants/s",
        0,
    ),
    (
        "c1000_ours_p50_us",
        "50 tasks / 1,000 locks, ours, acquire p50",
        "µs",
        0,
    ),
    (
        "c1000_ours_p99_us",
        "50 tasks / 1,000 locks, ours, acquire p99",
        "µs",
        0,
    ),
    (
        "c1000_fair_grants_s",
        "50 tasks / 1,000 locks, ours with a fair wait",
        "grants/s",
        0,
    ),
    (
        "c1000_fair_p50_us",
        "50 tasks / 1,000 locks, ours with a fair wait, acquire p50",
        "µs",
        0,
    ),
    (
        "c1000_fair_p99_us",
        "50 tasks / 1,000 locks, ours with a fair wait, acquire p99",
        "µs",
        0,
    ),
    (
        "c1000_rslock_grants_s",
        "50 tasks / 1,000 locks, rslock",
        "grants/s",
        0,
    ),
    (
        "c1000_rslock_p50_us",
        "50 tasks / 1,000 locks, rslock, acquire p50",
        "µs",
        0,
    ),
    (
        "c1000_rslock_p99_us",
        "50 tasks / 1,000 locks, rslock, acquire p99",
        "µs",
        0,
    ),
    (
        "wl_fake_ms",
        "test workload on the fake (median run)",
        "ms",
        2,
    ),
    (
        "wl_fake_commands_ms",
        "  of which 1,000 commands through FakeConnection",
        "ms",
        2,
    ),
    (
        "wl_fake_locks_ms",
        "  of which 100 lock cycles through FakeBackend",
        "ms",
        2,
    ),
    (
        "wl_fake_setup_ms",
        "  the same, creating the engine and client included",
        "ms",
        2,
    ),
    (
        "wl_redis_ms",
        "test workload on loopback Redis (median run)",
        "ms",
        2,
    ),
    ("wl_redis_commands_ms", "  of which 1,000 commands", "ms", 2),
    ("wl_redis_locks_ms", "  of which 100 lock cycles", "ms", 2),
    (
        "wl_redis_setup_ms",
        "  the same, connecting included",
        "ms",
        2,
    ),
    ("wd_holds", "watchdog: holds on one client", "holds", 0),
    ("wd_passes", "watchdog: passes measured", "passes", 0),
    (
        "wd_calls_per_pass",
        "watchdog: renew calls per pass",
        "calls",
        1,
    ),
    (
        "wd_pass_ms_median",
        "watchdog: wall time per pass, median",
        "ms",
        1,
    ),
    (
        "wd_pass_ms_max",
        "watchdog: wall time per pass, max",
        "ms",
        1,
    ),
    (
        "wd_failed_calls",
        "watchdog: renew calls that failed",
        "calls",
        0,
    ),
    (
        "mem_fake_peak_rss_bytes",
        "1M lock keys: fake, peak RSS (VmHWM) of the process",
        "MiB",
        1,
    ),
    (
        "mem_fake_rss_after_bytes",
        "1M lock keys: fake, RSS once filled",
        "MiB",
        1,
    ),
    (
        "mem_fake_rss_before_bytes",
        "fake process before filling",
        "MiB",
        1,
    ),
    (
        "mem_fake_bytes_per_key",
        "fake, peak bytes per key (peak − before) / keys",
        "bytes",
        0,
    ),
    (
        "mem_redis_used_memory_rss_bytes",
        "1M lock keys: Redis used_memory_rss",
        "MiB",
        1,
    ),
    (
        "mem_redis_used_memory_bytes",
        "1M lock keys: Redis used_memory",
        "MiB",
        1,
    ),
    (
        "mem_redis_rss_before_bytes",
        "Redis used_memory_rss before loading",
        "MiB",
        1,
    ),
    (
        "mem_redis_bytes_per_key",
        "Redis, bytes per key (rss − before) / keys",
        "bytes",
        0,
    ),
    (
        "mem_fake_size_of_entry",
        "size_of::<fake_redis::Entry>()",
        "bytes",
        0,
    ),
    (
        "mem_fake_size_of_value",
        "size_of::<fake_redis::Value>()",
        "bytes",
        0,
    ),
    (
        "mem_fake_size_of_hash",
        "size_of::<fake_redis::Hash>()",
        "bytes",
        0,
    ),
    (
        "mem_fake_size_of_bytes",
        "size_of::<bytes::Bytes>()",
        "bytes",
        0,
    ),
    (
        "crit_machine_fixed_inputs_s",
        "machine steps, fixed-lease cycle (criterion)",
        "inputs/s",
        0,
    ),
    (
        "crit_machine_watchdog_inputs_s",
        "machine steps, watchdog cycle (criterion)",
        "inputs/s",
        0,
    ),
    (
        "crit_client_pair_ct_us",
        "LockClient pair over an instant backend, current-thread rt (criterion)",
        "µs",
        2,
    ),
    (
        "crit_client_pair_mt_us",
        "LockClient pair over an instant backend, multi-thread rt (criterion)",
        "µs",
        2,
    ),
    (
        "crit_engine_get_s",
        "GET on Engine::execute directly (criterion)",
        "ops/s",
        0,
    ),
    (
        "crit_fakeconn_get_s",
        "GET through FakeConnection + AsyncCommands (criterion)",
        "ops/s",
        0,
    ),
    (
        "sim_events_s",
        "simulator: events per second (sim-tests throughput)",
        "events/s",
        0,
    ),
    (
        "sim_cluster_events_s",
        "simulator on 3 shards (3 primaries x 1 replica): events per second (sim-tests throughput)",
        "events/s",
        0,
    ),
    (
        "crit_lua_release_evalsha_s",
        "EVALSHA of redis-py's release script on Engine::execute, on the Lua VM (criterion)",
        "calls/s",
        0,
    ),
    (
        "crit_lua_release_not_owner_evalsha_s",
        "  of which a key holding another's token, EVALSHA alone (replies 0)",
        "calls/s",
        0,
    ),
    (
        "crit_lock_pair_native_s",
        "the lock's acquire+release by EVALSHA on Engine::execute, native twins, about 20,000 live latch keys (clock +1 ms per pair; criterion)",
        "pairs/s",
        0,
    ),
    (
        "crit_lock_pair_native_20ms_s",
        "the same, about 1,000 live latch keys (clock +20 ms per pair; criterion)",
        "pairs/s",
        0,
    ),
    (
        "crit_lock_pair_lua_s",
        "the same on the Lua VM (Engine::run_lock_scripts_on_lua) (criterion)",
        "pairs/s",
        0,
    ),
    (
        "crit_lock_pair_native_over_lua",
        "  native twins / Lua VM",
        "×",
        2,
    ),
    (
        "cg_engine_pair_instr",
        "instructions per lock pair inside Engine::execute, about 20,000 live latch keys (callgrind)",
        "instructions",
        0,
    ),
    (
        "cg_engine_rate_g",
        "  those instructions per second at the criterion row's rate",
        "G/s",
        2,
    ),
    (
        "cg_engine_pair_needed",
        "  instructions per pair that 2 M pairs/s would allow at that rate",
        "instructions",
        0,
    ),
    (
        "cg_engine_get_instr",
        "instructions per plain GET (a hit) inside Engine::execute (callgrind)",
        "instructions",
        0,
    ),
    (
        "cg_engine_set_instr",
        "instructions per plain SET (an overwrite) inside Engine::execute (callgrind)",
        "instructions",
        0,
    ),
    (
        "cg_sim_event_instr",
        "instructions per simulator event, one node (callgrind)",
        "instructions",
        0,
    ),
    (
        "cg_sim_rate_g",
        "  those instructions per second at the simulator row's rate",
        "G/s",
        2,
    ),
    (
        "cg_sim_event_needed",
        "  instructions per event that 3 M events/s would allow at that rate",
        "instructions",
        0,
    ),
];
