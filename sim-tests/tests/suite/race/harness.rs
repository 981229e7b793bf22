//! The harness's own promises.

use sim_tests::race::{Fault, Schedule, Swarm};

#[test]
fn a_schedule_prints_and_parses_back() {
    for seed in 1..200 {
        let schedule = Swarm::default().draw(seed, 3);
        let text = schedule.to_string();
        assert_eq!(text.parse::<Schedule>(), Ok(schedule), "{text}");
    }
    let s: Schedule = "seed=7; pause a at=10 for=40000; restart at=5 data=lose"
        .parse()
        .unwrap();
    assert_eq!(
        s.faults,
        vec![
            Fault::Pause {
                client: 0,
                at: 10,
                ms: 40_000
            },
            Fault::Restart {
                at: 5,
                keep_data: false
            }
        ]
    );
}
