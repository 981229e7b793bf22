//! A fixed number of lock cycles through the sans-IO machine, for counting its instructions per
//! input.
//!
//! The criterion bench of the machine (`examples/benches/machine.rs`) reports inputs per second,
//! which moves with whatever else the machine runs. Instructions do not: this program feeds the
//! same cycles (acquire, the acquire script's reply, unlock, the release script's reply; four
//! inputs, the replies scripted) `--cycles` times with a fixed lease and `--cycles` times on the
//! watchdog, after `--warm` cycles of each, and prints how many inputs it fed. The machine's cost
//! of one input is the difference of two counts over the difference of inputs, so the set-up
//! cancels out:
//!
//! ```text
//! cargo build --profile bench -p lock-core --example machine_inputs
//! valgrind --tool=callgrind target/release/examples/machine_inputs --cycles 20000
//! valgrind --tool=callgrind target/release/examples/machine_inputs --cycles 30000
//! ```
//!
//! The cycle and its driver are in `rig.rs`, which the criterion bench shares; the count is the
//! machine's own work per input, outputs dropped included.

mod rig;

use lock_core::Lease;
use rig::{INPUTS_PER_CYCLE, Rig};

fn main() {
    let mut cycles = 20_000u64;
    let mut warm = 2_000u64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        let value: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{flag} wants a count, got {value:?}"));
        match flag.as_str() {
            "--cycles" => cycles = value,
            "--warm" => warm = value,
            _ => panic!("flags: --cycles N, --warm N"),
        }
    }
    let lease = Lease::from_millis(30_000).expect("a positive lease");
    let mut inputs = 0;
    for (kind, lease) in [("fixed lease", Some(lease)), ("watchdog", None)] {
        let mut rig = Rig::new(lease);
        for _ in 0..warm + cycles {
            rig.cycle();
        }
        assert_eq!(rig.inputs, (warm + cycles) * INPUTS_PER_CYCLE);
        assert_eq!(rig.machine.ops_in_progress(), 0, "every cycle ended");
        println!("{kind}: {cycles} cycles after {warm} to warm up");
        inputs += rig.inputs;
    }
    println!("{inputs} inputs");
}
