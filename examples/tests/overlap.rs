//! No label of any picture lands on another or on a bar, for every scenario and for the
//! parameters the README teaches with: the boxes come from the font metrics the renderer assumes.

use examples::scenarios::{Params, SCENARIOS};
use examples::timeline::layout::layout;

/// The parameter sets the pictures are held to: the defaults, and each knob of the README moved.
fn parameter_sets() -> Vec<(String, Params)> {
    let base = Params::default();
    let mut sets = vec![("defaults".to_owned(), base.clone())];
    for ms in [9_000, 3_000, 60_000] {
        sets.push((
            format!("--watchdog-timeout {ms}"),
            Params {
                watchdog_timeout: ms,
                ..base.clone()
            },
        ));
    }
    for ms in [5_000, 15_000, 60_000] {
        sets.push((
            format!("--pause-for {ms}"),
            Params {
                pause_for: ms,
                ..base.clone()
            },
        ));
    }
    for n in [1, 3, 5] {
        sets.push((
            format!("--clients {n}"),
            Params {
                clients: Some(n),
                ..base.clone()
            },
        ));
    }
    sets.push((
        "--watchdog-timeout 9000 --pause-for 15000 --clients 4".to_owned(),
        Params {
            watchdog_timeout: 9_000,
            pause_for: 15_000,
            clients: Some(4),
            ..base
        },
    ));
    sets
}

#[test]
fn no_label_overlaps_another_or_a_bar_in_any_scenario() {
    let mut failures = Vec::new();
    for s in SCENARIOS {
        for (name, p) in parameter_sets() {
            let (_, _, t) = s.run(&p);
            let scene = layout(&t);
            for c in scene.collisions() {
                failures.push(format!("{} with {name}: {}", s.name, c.what));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_layout_is_the_same_every_time() {
    for s in SCENARIOS {
        let (_, _, t) = s.run(&Params::default());
        assert_eq!(layout(&t), layout(&t), "{}", s.name);
        let (_, _, again) = s.run(&Params::default());
        assert_eq!(t.to_svg(), again.to_svg(), "{}", s.name);
    }
}

#[test]
fn no_label_reads_as_a_comparison() {
    for s in SCENARIOS {
        let (_, _, t) = s.run(&Params::default());
        for (_, text) in layout(&t).texts() {
            assert!(
                !text.text.contains('>') && !text.text.contains('<'),
                "{}: {:?} reads as a comparison: say it in words or with an arrow",
                s.name,
                text.text
            );
        }
    }
}
