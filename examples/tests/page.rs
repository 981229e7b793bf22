//! The page of every scenario: committed as `docs/index.html`, it is what the program writes now,
//! and it fetches nothing from anywhere.

use examples::page::page;
use examples::scenarios::{Knob, Params, SCENARIOS};

#[test]
fn the_committed_page_is_what_the_program_writes_now() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/index.html");
    let committed = std::fs::read_to_string(&path).expect("docs/index.html is committed");
    assert!(
        committed == page(&Params::default()),
        "docs/index.html is stale: run `cargo run -p examples --bin watchdog-timeline -- --html docs/index.html`"
    );
}

#[test]
fn the_page_holds_every_scenario_and_fetches_nothing() {
    let html = page(&Params::default());
    for s in SCENARIOS {
        assert!(
            html.contains(&format!("<section id=\"{}\">", s.name)),
            "{}",
            s.name
        );
        assert!(
            html.contains(s.lesson.split('"').next().unwrap()),
            "{}",
            s.name
        );
        assert!(
            html.contains(&format!(
                "cargo run -p examples --bin watchdog-timeline -- --scenario {}</pre>",
                s.name
            )),
            "{}",
            s.name
        );
    }
    assert_eq!(html.matches("<svg ").count(), SCENARIOS.len());
    assert_eq!(html.matches("SIM_CASE=").count(), 2 * SCENARIOS.len());
    // The SVG namespace is a name, not a fetch; nothing else may point off the page.
    let rest = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for fetch in ["http:", "https:", "src=", "@import", "url(http", "<link"] {
        assert!(
            !rest.contains(fetch),
            "the page must not fetch: found {fetch:?}"
        );
    }
}

#[test]
fn each_scenario_lists_only_the_parameters_it_honours() {
    let html = page(&Params::default());
    for s in SCENARIOS {
        let start = html.find(&format!("<section id=\"{}\">", s.name)).unwrap();
        let end = start + html[start..].find("</section>").unwrap();
        let section = &html[start..end];
        for knob in Knob::ALL {
            let row = format!("<tr><td><code>--{}</code></td>", knob.flag());
            assert_eq!(
                section.contains(&row),
                s.honours.contains(&knob),
                "{}: --{}",
                s.name,
                knob.flag()
            );
        }
    }
    let watchdog = &html[html.find("<section id=\"watchdog\">").unwrap()..];
    let watchdog = &watchdog[..watchdog.find("</section>").unwrap()];
    assert!(!watchdog.contains("--crash-at"), "watchdog has no crash");
}
