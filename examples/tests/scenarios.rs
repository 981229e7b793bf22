//! Every scenario's lesson, asserted: the order and times of its key events. A change in the
//! library that alters a lesson fails here.

use examples::scenarios::{Knob, Params, SCENARIOS, find};
use examples::timeline::{ArrowKind, EventKind, Timeline};
use sim_tests::Checker;

fn run(name: &str) -> (sim_tests::Run, Timeline) {
    run_with(name, &Params::default())
}

fn run_with(name: &str, p: &Params) -> (sim_tests::Run, Timeline) {
    let (_, run, timeline) = find(name).expect("scenario exists").run(p);
    (run, timeline)
}

/// `t` lies in `[at, at + slack]` ms.
fn near(t: u64, at: u64, slack: u64) -> bool {
    (at..=at + slack).contains(&t)
}

#[test]
fn watchdog_renews_at_10_20_30_40_and_stops_at_the_unlock() {
    let (run, t) = run("watchdog");
    assert!(near(t.first("a", EventKind::Acquire).unwrap().at_ms, 0, 5));
    let renewals = t.times("a", EventKind::Renew);
    assert_eq!(renewals.len(), 4, "{t}");
    for (i, r) in renewals.iter().enumerate() {
        assert!(
            near(*r, 10_000 * (i as u64 + 1), 20),
            "renewal {i} at {r}\n{t}"
        );
    }
    let unlock = t.first("a", EventKind::Unlock).unwrap().at_ms;
    assert!(near(unlock, 47_000, 5));
    assert!(renewals.iter().all(|r| *r < unlock));
    assert!(
        run.all("a", "renew").iter().all(|r| *r < unlock),
        "no renewal after the unlock"
    );
    assert!(t.first("a", EventKind::Released).unwrap().at_ms > unlock);
}

#[test]
fn a_9_second_watchdog_renews_every_3_seconds() {
    let p = Params {
        watchdog_timeout: 9_000,
        work: Some(20_000),
        ..Params::default()
    };
    let (_, t) = run_with("watchdog", &p);
    let renewals = t.times("a", EventKind::Renew);
    assert_eq!(renewals.len(), 6, "{t}");
    for (i, r) in renewals.iter().enumerate() {
        assert!(near(*r, 3_000 * (i as u64 + 1), 20), "{t}");
    }
}

#[test]
fn a_lease_too_short_lets_a_second_client_in_and_the_watchdog_does_not() {
    let (run, t) = run("lease-too-short");
    let expire = t.first("server L0", EventKind::Expire).unwrap().at_ms;
    assert!(near(expire, 5_000, 5), "{t}");
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    assert!(
        near(b, expire, 3),
        "b enters within a round trip of the expiry\n{t}"
    );
    let a_end = t
        .times("a", EventKind::WriteAccepted)
        .last()
        .copied()
        .unwrap();
    assert!(
        a_end > b,
        "a is still working when b enters: the work is done twice"
    );
    assert!(t.times("a", EventKind::Renew).is_empty() && t.times("b", EventKind::Renew).is_empty());
    assert!(!run.of(Checker::UnfencedOverlap).is_empty());
    // Under the watchdog, d enters only after c's unlock.
    let c_unlock = t.first("c", EventKind::Unlock).unwrap().at_ms;
    let d = t.first("d", EventKind::Acquire).unwrap().at_ms;
    assert!(d > c_unlock && near(d, c_unlock, 5), "{t}");
    assert!(
        run.violations.iter().all(|v| !v.message.starts_with("L1")),
        "L1 is safe"
    );
}

#[test]
fn a_lost_unlock_reply_is_answered_by_the_latch() {
    let (run, t) = run("lost-unlock-reply");
    let unlock = t.first("a", EventKind::Unlock).unwrap().at_ms;
    let dropped = t.first("a", EventKind::Dropped).unwrap().at_ms;
    let timeout = t.first("a", EventKind::Timeout).unwrap().at_ms;
    let released = t.first("a", EventKind::Released).unwrap();
    assert!(
        unlock <= dropped && dropped < timeout && timeout < released.at_ms,
        "{t}"
    );
    assert!(released.detail.contains("deleted"), "{t}");
    assert!(run.all("a", "renew").iter().all(|r| *r < unlock));
    assert!(t.first("a", EventKind::UnlockFailed).is_none());
}

#[test]
fn a_lost_unlock_request_is_unknown_and_the_key_expires_a_lease_after_the_last_renewal() {
    let (run, t) = run("lost-unlock-request");
    let unlock = t.first("a", EventKind::Unlock).unwrap().at_ms;
    let failed = t.first("a", EventKind::UnlockFailed).unwrap();
    assert!(failed.detail.contains("unknown"), "{t}");
    let last_renew = *t.times("a", EventKind::Renew).last().unwrap();
    assert!(last_renew < unlock);
    assert!(
        run.all("a", "renew").iter().all(|r| *r < unlock),
        "no renewal after the unlock"
    );
    let expire = t.first("server L0", EventKind::Expire).unwrap().at_ms;
    assert!(near(expire, last_renew + 30_000, 5), "{t}");
}

#[test]
fn a_crashed_holder_is_followed_by_the_next_client_at_50_seconds() {
    let (run, t) = run("client-crash");
    let renewals = t.times("a", EventKind::Renew);
    assert_eq!(renewals.len(), 2);
    assert!(near(renewals[0], 10_000, 10) && near(renewals[1], 20_000, 10));
    assert_eq!(t.first("a", EventKind::Crash).unwrap().at_ms, 25_000);
    let expire = t.first("server L0", EventKind::Expire).unwrap().at_ms;
    assert!(near(expire, 50_000, 10), "{t}");
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    assert!(near(b, expire, 5), "{t}");
    assert!(run.violations.is_empty());
}

#[test]
fn a_gc_pause_longer_than_the_lease_lets_an_unfenced_resource_accept_both() {
    let (run, t) = run("gc-pause");
    assert_eq!(t.first("a", EventKind::Pause).unwrap().at_ms, 19_000);
    let expire = t.first("server L0", EventKind::Expire).unwrap().at_ms;
    assert!(near(expire, 40_000, 10), "{t}");
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    assert!(near(b, expire, 5));
    assert_eq!(t.first("a", EventKind::Resume).unwrap().at_ms, 55_000);
    let a_writes = t.times("a", EventKind::WriteAccepted);
    assert!(
        a_writes.contains(&55_000),
        "a writes on resuming, and it is accepted\n{t}"
    );
    assert!(!run.of(Checker::UnfencedOverlap).is_empty());
    assert!(t.first("a", EventKind::WriteRejected).is_none());
}

#[test]
fn a_foreign_lock_is_lost_under_the_pause_that_the_watchdog_outlives() {
    let (run, t) = run("foreign-lock-gc-pause");
    // redis-py's lock: a's 10 s lease runs out in its pause, and b takes the key.
    assert_eq!(t.first("a", EventKind::Pause).unwrap().at_ms, 4_000);
    let expire = t.first("server F0", EventKind::Expire).unwrap().at_ms;
    assert!(near(expire, 10_000, 5), "{t}");
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    assert!(b >= expire && b < 16_000, "{t}");
    // a resumes and writes while b holds the key, and only its release then says so: 0.
    assert_eq!(t.first("a", EventKind::Resume).unwrap().at_ms, 16_000);
    assert!(
        t.times("a", EventKind::WriteAccepted).contains(&16_000),
        "{t}"
    );
    assert!(
        run.foreign
            .overlaps
            .iter()
            .any(|(at, _, w, o)| (*at, w.as_str(), o.as_str()) == (16_000, "a", "b")),
        "{:?}",
        run.foreign.overlaps
    );
    let failed = t.first("a", EventKind::UnlockFailed).unwrap();
    assert!(
        failed.at_ms > 16_000 && failed.detail.contains("replied 0"),
        "{t}"
    );
    let releases: Vec<_> = run
        .foreign
        .messages
        .iter()
        .filter(|m| m.purpose == "release" && m.reply.is_some())
        .collect();
    assert_eq!(
        releases.last().unwrap().reply,
        Some(Ok(lock_core::Reply::Int(0)))
    );
    // Ours, paused as long: renewed on resuming, never lost, and d enters after c's unlock.
    assert!(t.first("c", EventKind::Lost).is_none(), "{t}");
    assert!(t.first("c", EventKind::MayBeLost).is_none(), "{t}");
    assert!(near(
        t.first("c", EventKind::Renew).unwrap().at_ms,
        16_000,
        5
    ));
    let c_released = t.first("c", EventKind::Released).unwrap().at_ms;
    assert!(t.first("d", EventKind::Acquire).unwrap().at_ms >= c_released);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    // The picture names the foreign key's answers.
    let svg = t.to_svg();
    for words in ["server F0", "a&apos;s release script: 0", "NOSCRIPT"] {
        assert!(
            svg.contains(words) || svg.contains(&words.replace("&apos;", "'")),
            "{words}"
        );
    }
}

#[test]
fn with_fencing_the_paused_holders_stale_write_is_rejected() {
    let (_, t) = run("gc-pause-fenced");
    let b_write = t.first("b", EventKind::WriteAccepted).unwrap();
    // A token is the server's clock in microseconds at its grant: a's at 1 ms, b's at 40.003 s.
    assert!(b_write.detail.contains("token=1700000040003000"), "{t}");
    let rejected = t.first("a", EventKind::WriteRejected).unwrap();
    assert_eq!(rejected.at_ms, 55_000);
    assert!(rejected.detail.contains("token=1700000000001000"), "{t}");
    assert!(b_write.at_ms < rejected.at_ms);
}

#[test]
fn reentry_keeps_the_lock_until_the_last_unlock() {
    let (_, t) = run("reentrant");
    let acquires: Vec<_> = t
        .sorted_events()
        .into_iter()
        .filter(|e| e.actor == "a" && e.kind == EventKind::Acquire)
        .collect();
    assert_eq!(acquires.len(), 2);
    assert!(acquires[1].detail.contains("count=2"));
    let released: Vec<_> = t
        .sorted_events()
        .into_iter()
        .filter(|e| e.actor == "a" && e.kind == EventKind::Released)
        .collect();
    assert_eq!(released.len(), 2);
    assert!(released[0].detail.contains("still held"), "{t}");
    assert!(released[1].detail.contains("deleted"), "{t}");
    let renewals = t.times("a", EventKind::Renew);
    assert!(
        renewals
            .iter()
            .any(|r| *r > released[0].at_ms && *r < released[1].at_ms),
        "still renewed between the two unlocks\n{t}"
    );
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    assert!(b > released[1].at_ms);
}

#[test]
fn a_fair_lock_serves_b_c_and_d_in_the_order_they_asked() {
    let (run, t) = run("fair");
    let all: Vec<_> = run.violations.iter().collect();
    assert!(all.is_empty(), "{all:#?}");
    let at = |n: &str| t.first(n, EventKind::Acquire).unwrap().at_ms;
    let released = |n: &str| t.first(n, EventKind::Released).unwrap().at_ms;
    assert!(near(at("a"), 0, 5), "{t}");
    // Each waiter is granted in the order it asked, within a few round trips of the release
    // before it: woken on its own channel, not by a poll.
    for (before, next) in [("a", "b"), ("b", "c"), ("c", "d")] {
        assert!(
            near(at(next), released(before), 10),
            "{next} after {before}\n{t}"
        );
    }
    // The queue lane shows all three waiting, head first, and then each leaving in turn.
    let queue: Vec<&str> = t
        .bars
        .iter()
        .filter(|b| b.actor == "queue L0")
        .map(|b| b.label.as_str())
        .collect();
    assert!(queue.contains(&"queue: b, c, d"), "{queue:?}");
    let order: Vec<usize> = ["queue: b, c, d", "queue: c, d", "queue: d"]
        .iter()
        .map(|l| queue.iter().position(|q| q == l).expect(l))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{queue:?}");
}

#[test]
fn readers_share_and_the_writer_and_a_later_reader_each_wait_their_turn() {
    let (run, t) = run("read-write");
    let all: Vec<_> = run.violations.iter().collect();
    assert!(all.is_empty(), "{all:#?}");
    let at = |n: &str| t.first(n, EventKind::Acquire).unwrap().at_ms;
    let released = |n: &str| t.first(n, EventKind::Released).unwrap().at_ms;
    // a and b read at once; w waits for the last of them, c (asking at 8 s) for w.
    assert!(near(at("a"), 0, 5) && near(at("b"), 0, 5), "{t}");
    let readers_done = released("a").max(released("b"));
    assert!(near(at("w"), readers_done, 10), "{t}");
    assert!(at("w") > 5_000, "w waited for the readers\n{t}");
    assert!(near(at("c"), released("w"), 10), "{t}");
    assert!(at("c") > 8_000, "c waited for w\n{t}");
    // The key's mode, and who holds it beside it.
    let mode: Vec<&str> = t
        .bars
        .iter()
        .filter(|b| b.actor == "mode L0")
        .map(|b| b.label.as_str())
        .collect();
    for label in ["mode: read (a, b)", "mode: write (w)", "mode: read (c)"] {
        assert!(mode.contains(&label), "{label} in {mode:?}");
    }
    let key: Vec<&str> = t
        .bars
        .iter()
        .filter(|b| b.actor == "server L0")
        .map(|b| b.label.as_str())
        .collect();
    for label in [
        "key: a reads, 1 hold",
        "key: b reads, 1 hold",
        "key: w writes, 1 hold",
    ] {
        assert!(key.contains(&label), "{label} in {key:?}");
    }
    assert!(!t.times("a", EventKind::Read).is_empty(), "{t}");
}

#[test]
fn a_failover_within_the_lag_gives_the_lock_to_b_while_a_works() {
    let (run, t) = run("failover-lag");
    let a = t.first("a", EventKind::Acquire).unwrap().at_ms;
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    // a is told at once, before the replica (300 ms behind) has the grant; the failover at
    // 150 ms loses it; b is granted at 400 ms while a works until 6 s.
    assert!(near(a, 0, 5), "{t}");
    assert!(near(b, 400, 5), "{t}");
    let a_lost = t.first("a", EventKind::Lost).unwrap().at_ms;
    assert!(near(a_lost, 150, 5), "a learns at once\n{t}");
    let a_unlock = t.first("a", EventKind::Unlock).unwrap().at_ms;
    assert!(a_unlock > b, "{t}");
    let named = run.of(Checker::ServerExclusive);
    assert_eq!(named.len(), 1, "{t}");
    assert!(
        named[0].message.contains("failover"),
        "{}",
        named[0].message
    );
}

#[test]
fn with_the_replica_check_b_waits_for_a_across_the_failover() {
    let (run, t) = run("failover-synced");
    let all: Vec<_> = run.violations.iter().collect();
    assert!(
        all.iter()
            .all(|v| v.checker != Checker::ServerExclusive && v.checker != Checker::ClientExclusive),
        "{all:#?}"
    );
    // a is not told before the failover (its WAIT blocks until the replica has the grant, and
    // the failover comes first); its acquire asks again and is granted by the new primary.
    let a = t.first("a", EventKind::Acquire).unwrap().at_ms;
    assert!(a > 150 && a < 400, "{t}");
    // b asks at 400 ms and waits for a's unlock.
    let a_released = t.first("a", EventKind::Released).unwrap().at_ms;
    let b = t.first("b", EventKind::Acquire).unwrap().at_ms;
    assert!(b > 6_000 && near(b, a_released, 10), "{t}");
}

#[test]
fn every_scenario_draws_an_svg_with_a_view_box() {
    for s in SCENARIOS {
        let (_, _, t) = s.run(&Params::default());
        let svg = t.to_svg();
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{}: the SVG does not parse: {e}", s.name));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg", "{}", s.name);
        assert!(root.attribute("viewBox").is_some(), "{}", s.name);
        assert!(
            svg.contains("server L0"),
            "{}: a lane for the key on the server",
            s.name
        );
    }
}

#[test]
fn the_lost_unlock_reply_picture_shows_the_call_the_lost_reply_the_retry_and_the_latch() {
    let (_, t) = run("lost-unlock-reply");
    let unlock = t.first("a", EventKind::Unlock).unwrap().at_ms;
    let timeout = t.first("a", EventKind::Timeout).unwrap().at_ms;
    let to = |lane: &str, kind: ArrowKind, lost: bool| {
        t.arrows
            .iter()
            .filter(|a| a.to_lane == lane && a.kind == kind && a.lost == lost)
            .map(|a| a.from_ms)
            .collect::<Vec<_>>()
    };
    assert!(
        to("server L0", ArrowKind::Call, false).contains(&unlock),
        "the unlock's call reaches the key\n{t:#?}"
    );
    let lost = t
        .arrows
        .iter()
        .find(|a| a.from_lane == "server L0" && a.kind == ArrowKind::Reply && a.lost)
        .expect("its reply is lost on the way back");
    assert!(lost.from_ms > unlock && lost.from_ms < timeout);
    let retries = to("latch L0", ArrowKind::Call, false);
    assert_eq!(retries, vec![timeout], "the retry goes out at the timeout");
    let answer = t
        .arrows
        .iter()
        .find(|a| a.from_lane == "latch L0" && a.kind == ArrowKind::Reply)
        .expect("the latch answers");
    assert!(!answer.lost && answer.to_lane == "a");
    assert!(
        t.notes
            .iter()
            .any(|n| n.lane == "latch L0" && n.text.contains("the latch answers: released"))
    );
    assert!(
        t.notes
            .iter()
            .any(|n| n.lane == "a" && n.text.contains("same request id"))
    );
    let latch = t.bars.iter().find(|b| b.actor == "latch L0").unwrap();
    assert!(
        latch.from_ms < timeout && latch.to_ms > timeout,
        "{latch:?}"
    );
    let svg = t.to_svg();
    assert!(svg.contains("the latch answers: released") && svg.contains("<path d=\"M"));
}

#[test]
fn the_fenced_picture_shows_both_tokens_and_the_rejected_write() {
    let (_, t) = run("gc-pause-fenced");
    let counter: Vec<&str> = t
        .bars
        .iter()
        .filter(|b| b.actor == "counter L0")
        .map(|b| b.label.as_str())
        .collect();
    // Tokens are drawn by order of issue, so the older one reads as the lower at a glance.
    assert_eq!(counter, vec!["counter = #1 (a)", "counter = #2 (b)"]);
    let notes: Vec<&str> = t
        .notes
        .iter()
        .filter(|n| n.lane == "resource L0")
        .map(|n| n.text.as_str())
        .collect();
    assert!(notes.contains(&"b's token #2: accepted"), "{notes:?}");
    assert!(
        notes.contains(&"a's token #1: rejected, #2 seen"),
        "{notes:?}"
    );
    let rejected = t
        .arrows
        .iter()
        .find(|a| a.kind == ArrowKind::WriteRejected)
        .unwrap();
    assert_eq!(
        (rejected.from_lane.as_str(), rejected.from_ms),
        ("a", 55_000)
    );
    assert!(rejected.detail.contains("1700000000001000"), "{rejected:?}");
    assert!(
        t.bars
            .iter()
            .any(|b| b.actor == "resource L0" && b.label == "highest seen: #2")
    );
    // The legend gives each token in full, and the text timeline names each write's token both
    // ways.
    assert_eq!(
        t.footnotes,
        vec![
            "L0's fencing tokens, by order of issue (a later one is higher): \
             #1 = 1700000000001000 (a, at 0.001 s), #2 = 1700000040003000 (b, at 40.003 s)"
        ]
    );
    let text = t.to_string();
    assert!(text.contains("token=1700000000001000 (#1)"), "{text}");
    assert!(text.contains("token=1700000040003000 (#2)"), "{text}");
    let svg = t.to_svg();
    for words in [
        "counter = #1 (a)",
        "counter = #2 (b)",
        "a's token #1: rejected, #2 seen",
        "#1 = 1700000000001000",
    ] {
        assert!(svg.contains(words), "{words} is drawn");
    }
    // Only the legend's footnote spells a token out: no label of the lanes does.
    let scene = examples::timeline::layout::layout(&t);
    for (_, text) in scene.texts() {
        if text.role != examples::timeline::scene::Role::Legend {
            assert!(
                !text.text.contains("17000000"),
                "{:?} spells a token out",
                text.text
            );
        }
    }
}

#[test]
fn no_line_of_the_fenced_report_says_the_resource_took_a_stale_write() {
    let s = find("gc-pause-fenced").unwrap();
    let p = Params::default();
    let (case, run, t) = s.run(&p);
    // The simulator sends every write to an unfenced twin of the resource as well, which is why
    // the overlap is reported at all.
    assert_eq!(
        run.of(Checker::UnfencedOverlap).len(),
        2,
        "{:?}",
        run.violations
    );
    let report = examples::page::report(s, &p, (&case, &run, &t), false);
    assert!(
        !report.contains("what the checkers saw"),
        "every line is the twin's, told apart:\n{report}"
    );
    assert!(
        report.contains("what the unfenced twin of the resource saw"),
        "{report}"
    );
    let lines: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("unfenced resource overlap"))
        .collect();
    assert_eq!(lines.len(), 2, "{report}");
    assert!(
        lines[0].ends_with("the fenced resource accepted b's token #2, the highest it had seen: a lower one is refused from now on"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("the fenced resource rejected a's token #1, having seen #2"),
        "{}",
        lines[1]
    );
    // Without fencing the same overlap is what the checkers saw, and nothing explains it away.
    let s = find("gc-pause").unwrap();
    let (case, run, t) = s.run(&p);
    let report = examples::page::report(s, &p, (&case, &run, &t), false);
    assert!(report.contains("what the checkers saw"), "{report}");
    assert!(!report.contains("twin"), "{report}");
}

#[test]
fn each_renewal_moves_the_keys_expiry_a_third_of_the_lease_forward() {
    let (_, t) = run("watchdog");
    let expiry: Vec<_> = t.bars.iter().filter(|b| b.actor == "expiry L0").collect();
    let renewals = t.times("a", EventKind::Renew);
    // One deadline for the grant and one per renewal, each set when the call was applied.
    assert_eq!(expiry.len(), 1 + renewals.len(), "{expiry:#?}");
    let deadline = |label: &str| -> f64 {
        let words: Vec<&str> = label.split(' ').collect();
        let at = words.iter().position(|w| *w == "s" || *w == "s,").unwrap();
        words[at - 1].parse().unwrap()
    };
    let unlock = t.first("a", EventKind::Unlock).unwrap().at_ms;
    for (i, pair) in expiry.windows(2).enumerate() {
        let (before, after) = (pair[0], pair[1]);
        // Applied on the server just before the client hears of it.
        assert!(after.from_ms.abs_diff(renewals[i]) <= 5, "{after:?}");
        // At the renewal the old deadline was still two thirds of the lease away, and the new
        // one is a whole lease away: the deadline moves forward by the renewal interval.
        let moved = deadline(&after.label) - deadline(&before.label);
        assert!((moved - 10.0).abs() < 0.1, "{before:?} then {after:?}");
        assert!(
            deadline(&before.label) * 1000.0 > after.from_ms as f64 + 19_000.0,
            "{before:?}"
        );
    }
    // The first deadline is reached by nothing: it expires where its bar ends, a lease after the
    // grant. The last ones end when the unlock deletes the key.
    assert!(near(expiry[0].to_ms, 30_000, 5) && expiry[0].label == "expires at 30.0 s");
    let last = expiry.last().unwrap();
    assert!(near(last.to_ms, unlock, 5), "{last:?}");
    assert!(last.label.ends_with("deleted first"), "{last:?}");
    assert!(t.to_svg().contains("expiry L0"));
}

#[test]
fn the_key_shows_its_owner_and_hold_count_and_every_message_is_drawn() {
    let (run, t) = run("reentrant");
    let key: Vec<&str> = t
        .bars
        .iter()
        .filter(|b| b.actor == "server L0")
        .map(|b| b.label.as_str())
        .collect();
    assert!(
        key.contains(&"key: a, 2 holds") && key.contains(&"key: b, 1 hold"),
        "{key:?}"
    );
    let calls = t
        .arrows
        .iter()
        .filter(|a| a.kind == ArrowKind::Call)
        .count();
    assert_eq!(calls, run.messages.len(), "one arrow per call");
    let told = t
        .arrows
        .iter()
        .filter(|a| a.kind == ArrowKind::Publish)
        .count();
    assert_eq!(told, run.deliveries.len());
    assert!(told >= 1, "the waiter is told of the unlock");
}

#[test]
fn the_committed_pictures_are_what_the_program_draws_now() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/book/src/scenarios");
    for s in SCENARIOS {
        let (_, _, t) = s.run(&Params::default());
        let path = docs.join(format!("{}.svg", s.name));
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            committed == t.to_svg(),
            "{} is stale: run `cargo run -p examples --bin watchdog-timeline -- --scenario {} --svg docs/book/src/scenarios/{}.svg`",
            path.display(),
            s.name,
            s.name
        );
    }
}

#[test]
fn the_help_names_every_scenario_of_the_table_and_refuses_others() {
    let bin = env!("CARGO_BIN_EXE_watchdog-timeline");
    let help = std::process::Command::new(bin)
        .arg("--help")
        .output()
        .expect("watchdog-timeline runs");
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    for s in SCENARIOS {
        let first = s.lesson.split(". ").next().unwrap().trim_end_matches('.');
        assert!(text.contains(s.name), "--help lacks {}:\n{text}", s.name);
        assert!(
            text.contains(first),
            "--help lacks the lesson of {}:\n{text}",
            s.name
        );
    }
    let unknown = std::process::Command::new(bin)
        .args(["--scenario", "no-such-scenario"])
        .output()
        .expect("watchdog-timeline runs");
    assert!(!unknown.status.success());
    let err = String::from_utf8(unknown.stderr).unwrap();
    for s in SCENARIOS {
        assert!(err.contains(s.name), "the refusal lacks {}:\n{err}", s.name);
    }
}

/// `p` with `knob` moved off its default to a value every scenario can run with.
fn moved(knob: Knob) -> Params {
    let mut p = Params::default();
    match knob {
        Knob::WatchdogTimeout => p.watchdog_timeout = 9_000,
        Knob::Lease => p.lease = 7_000,
        Knob::Work => p.work = Some(12_000),
        Knob::PauseAt => p.pause_at = 17_000,
        Knob::PauseFor => p.pause_for = 20_000,
        Knob::CrashAt => p.crash_at = 21_000,
        Knob::Clients => p.clients = Some(3),
        Knob::Seed => p.seed = 2,
    }
    p
}

#[test]
fn each_scenario_honours_exactly_the_knobs_its_table_entry_lists() {
    let base = Params::default();
    for s in SCENARIOS {
        let before = (s.case(&base), s.foreign(&base));
        for knob in Knob::ALL {
            let p = moved(knob);
            let changed = (s.case(&p), s.foreign(&p)) != before;
            assert_eq!(
                changed,
                s.honours.contains(&knob),
                "{}: --{} {}",
                s.name,
                knob.flag(),
                if changed {
                    "changes the run but is not listed"
                } else {
                    "is listed but changes nothing"
                }
            );
        }
    }
}
