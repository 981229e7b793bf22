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
//! The driver does what any driver must (a request's name is an owned `String`) and nothing more,
//! so the count is the machine's own work per input, outputs dropped included.

use lock_core::machine::{
    AcquireRequest, Call, CallId, Done, Input, LockMachine, OpId, Output, Request, SeededIds, Wait,
};
use lock_core::{Lease, LockConfig, MonoTime, Reply};

/// Lock names the cycles rotate through, as in the criterion bench.
const LOCKS: usize = 1_000;
/// Inputs per cycle: acquire, its reply, unlock, its reply.
const INPUTS_PER_CYCLE: u64 = 4;

/// A machine and the scripted side of its conversation.
struct Rig {
    machine: LockMachine,
    names: Vec<String>,
    lease: Option<Lease>,
    now: u64,
    next_op: u64,
    cycle: usize,
    inputs: u64,
}

impl Rig {
    fn new(lease: Option<Lease>) -> Rig {
        Rig {
            machine: LockMachine::new(LockConfig::default(), SeededIds::new(7))
                .expect("the default config is valid"),
            names: (0..LOCKS).map(|i| format!("bench:lock:{i}")).collect(),
            lease,
            now: 0,
            next_op: 0,
            cycle: 0,
            inputs: 0,
        }
    }

    /// Feeds `input`, drains every output and asks for the next timeout, as a driver does;
    /// returns the id of the call it asked for, if any, and the result of the operation it
    /// finished, if any.
    fn step(&mut self, input: Input) -> (Option<CallId>, Option<Done>) {
        self.inputs += 1;
        self.machine.handle(input, MonoTime(self.now));
        let (mut call, mut done) = (None, None);
        while let Some(output) = self.machine.poll_output() {
            match output {
                Output::Call {
                    id,
                    call: Call::Script(_),
                } => call = Some(id),
                Output::Done { result, .. } => done = Some(result.expect("scripted success")),
                _ => {}
            }
        }
        std::hint::black_box(self.machine.poll_timeout());
        (call, done)
    }

    /// One acquire → granted → unlock → deleted cycle; one virtual millisecond passes per cycle.
    fn cycle(&mut self) {
        self.now += 1;
        self.cycle = (self.cycle + 1) % LOCKS;
        self.next_op += 1;
        let (call, _) = self.step(Input::Request {
            op: OpId(self.next_op),
            request: Request::Acquire(AcquireRequest {
                name: self.names[self.cycle].clone(),
                owner: None,
                lease: self.lease,
                wait: Wait::Forever,
                fenced: false,
            }),
        });
        let (_, done) = self.step(Input::CallResult {
            id: call.expect("an acquire call"),
            result: Ok(Reply::Nil),
        });
        let Some(Done::Acquired(acquired)) = done else {
            panic!("the acquire was not granted: {done:?}");
        };
        self.next_op += 1;
        let (call, _) = self.step(Input::Request {
            op: OpId(self.next_op),
            request: Request::Release {
                hold: acquired.hold,
                name: self.names[self.cycle].clone(),
                owner: acquired.owner,
            },
        });
        let (_, done) = self.step(Input::CallResult {
            id: call.expect("a release call"),
            result: Ok(Reply::Int(1)),
        });
        assert!(
            matches!(done, Some(Done::Unlocked(_))),
            "the unlock was not answered: {done:?}"
        );
    }
}

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
