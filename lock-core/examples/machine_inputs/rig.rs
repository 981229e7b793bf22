//! The machine and the scripted side of its conversation: one lock cycle of four inputs (an
//! acquire, the acquire script's reply, an unlock, the release script's reply), the replies
//! scripted. Shared by the `machine_inputs` example, which counts the machine's instructions per
//! input, and by the criterion bench of the machine (`examples/benches/machine.rs`), which
//! includes this file by its path, so that both measure the same cycle.
//!
//! The driver does what any driver must (a request carries the lock's shared name, every output
//! is drained and dropped, the next timeout is asked for) and nothing more.

use lock_core::machine::{
    AcquireRequest, Call, CallId, Done, Input, LockMachine, LockName, OpId, Output, Request,
    SeededIds, Wait,
};
use lock_core::{Lease, LockConfig, MonoTime, Reply};

/// Lock names the cycles rotate through, as in the criterion bench.
pub const LOCKS: usize = 1_000;
/// Inputs per cycle: acquire, its reply, unlock, its reply.
pub const INPUTS_PER_CYCLE: u64 = 4;

/// A machine and the scripted side of its conversation.
pub struct Rig {
    /// The machine.
    pub machine: LockMachine,
    names: Vec<LockName>,
    lease: Option<Lease>,
    now: u64,
    next_op: u64,
    cycle: usize,
    /// Inputs fed so far.
    pub inputs: u64,
}

impl Rig {
    /// A fresh machine whose acquires ask for `lease` (`None`: the watchdog).
    pub fn new(lease: Option<Lease>) -> Rig {
        Rig {
            machine: LockMachine::new(LockConfig::default(), SeededIds::new(7))
                .expect("the default config is valid"),
            names: (0..LOCKS)
                .map(|i| format!("bench:lock:{i}").into())
                .collect(),
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
    pub fn cycle(&mut self) {
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
