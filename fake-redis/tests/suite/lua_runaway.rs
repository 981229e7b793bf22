//! A script that never ends cannot hang the engine: past its instruction budget it is ended with
//! the error Redis gives a killed script, even if it catches errors itself, and the engine serves
//! the next command. The budget counts Lua instructions, not time, so the same script ends the
//! same way on every run and every clock.

use bytes::Bytes;
use fake_redis::{Engine, Frame, ManualClock};

fn eval(engine: &mut Engine, body: &str) -> Frame {
    let client = engine.connect();
    engine.execute(
        client,
        &[
            Bytes::from_static(b"EVAL"),
            Bytes::copy_from_slice(body.as_bytes()),
            Bytes::from_static(b"0"),
        ],
    )
}

fn killed(reply: &Frame, body: &str) {
    let sha = sha1_smol::Sha1::from(body).digest().to_string();
    let text = reply.error_text().unwrap_or_default();
    assert!(
        text.starts_with("ERR Script killed by user with SCRIPT KILL... script: ")
            && text.contains(&sha),
        "{reply:?}"
    );
}

#[test]
fn a_loop_that_never_ends_is_ended_by_its_budget_and_the_engine_serves_on() {
    let mut engine = Engine::new(ManualClock::default());
    let body = "while true do end";
    let first = eval(&mut engine, body);
    killed(&first, body);
    // Deterministic: the same script ends with the same reply.
    assert_eq!(eval(&mut engine, body), first);
    assert_eq!(
        eval(&mut engine, "return 'still here'"),
        Frame::bulk("still here")
    );
}

#[test]
fn catching_the_error_does_not_keep_a_runaway_script_alive() {
    let mut engine = Engine::new(ManualClock::default());
    for body in [
        "while true do pcall(function() while true do end end) end",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
        "while true do xpcall(function() while true do end end, function(m) return m end) end",
    ] {
        killed(&eval(&mut engine, body), body);
    }
    assert_eq!(eval(&mut engine, "return 1"), Frame::Integer(1));
}
