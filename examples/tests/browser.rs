//! The page of every scenario, opened in a real browser: headless Chromium, with its networking
//! features off, lays it out, a check script appended to a copy of the page writes the size of
//! every picture and every error it saw into the DOM, and the test reads the dumped DOM and the
//! browser's console log. It saves a screenshot of the page beside the test's other output.
//!
//! Chromium comes from `scripts/test`, which installs Debian's `chromium` when it is missing and
//! exports its path as `CHROMIUM`; without it the test fails and says so, it never skips. It is
//! built with the feature `test-browser`, which scripts/test turns on, so a plain `cargo test`
//! needs no browser.
#![cfg(feature = "test-browser")]

use examples::page::page;
use examples::scenarios::{Params, SCENARIOS};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The check appended to the copy of the page: it runs after every picture is parsed, asks for
/// each one's laid-out size, and writes them, with any error seen, into an element of its own.
const CHECK: &str = r#"<script>
(function () {
  const sizes = Array.from(document.querySelectorAll("figure svg")).map(function (svg) {
    const r = svg.getBoundingClientRect();
    return Math.round(r.width) + "x" + Math.round(r.height);
  });
  const out = document.createElement("pre");
  out.id = "browser-check";
  out.textContent = "pictures " + sizes.join(" ") + "\nerrors " + window.__errors.length + " " + window.__errors.join(" | ");
  document.body.appendChild(out);
})();
</script>
"#;

/// Put first in the head: every error and `console.error` from here on is kept for the check.
const CATCH: &str = r#"<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
console.error = function () { window.__errors.push(Array.from(arguments).join(" ")); };
</script>
"#;

fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let candidate = dir.join("chromium");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "headless Chromium is needed for the browser test and was not found (CHROMIUM is unset \
         and there is no `chromium` on PATH): run scripts/test, which installs Debian's chromium \
         package and exports CHROMIUM"
    );
}

/// What a browser run wrote: its standard output and its log.
struct Output {
    stdout: String,
    stderr: String,
}

/// Runs Chromium headless on `page` with `args`, networking features off, within two minutes.
/// Its output goes to files beside the profile (a pipe nobody reads while waiting would fill).
fn run_chromium(browser: &Path, profile: &Path, args: &[String], page: &Path) -> Output {
    let (out_path, err_path) = (profile.with_extension("out"), profile.with_extension("log"));
    let file = |p: &Path| std::fs::File::create(p).expect("the browser's output file");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-domain-reliability",
            "--disable-extensions",
            "--disable-sync",
            "--metrics-recording-only",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::from(file(&out_path)))
        .stderr(Stdio::from(file(&err_path)))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}; run scripts/test", browser.display()));
    // A loaded machine can be slow to start a browser; a hung one is killed, and the test fails.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("chromium runs") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let output = Output {
        stdout: read(&out_path),
        stderr: read(&err_path),
    };
    assert!(
        status.success(),
        "chromium failed: {status}\n{}",
        output.stderr
    );
    output
}

#[test]
fn every_picture_of_the_page_has_a_size_and_the_console_shows_no_error() {
    let browser = chromium();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("the test's output directory");
    let html = page(&Params::default())
        .replacen("<head>\n", &format!("<head>\n{CATCH}"), 1)
        .replacen("</body>", &format!("{CHECK}</body>"), 1);
    let copy = out.join("index.html");
    std::fs::write(&copy, html).expect("the page's copy");

    let dump = run_chromium(
        &browser,
        &out.join("profile-dom"),
        &["--dump-dom".to_owned()],
        &copy,
    );
    let dom = &dump.stdout;
    let check = dom
        .split("<pre id=\"browser-check\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("the check did not run; the DOM was:\n{dom}"));
    let mut lines = check.lines();
    let sizes: Vec<&str> = lines
        .next()
        .and_then(|l| l.strip_prefix("pictures "))
        .expect("the pictures' sizes")
        .split(' ')
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        sizes.len(),
        SCENARIOS.len(),
        "one picture per scenario: {check}"
    );
    for (s, size) in SCENARIOS.iter().zip(&sizes) {
        let (w, h) = size.split_once('x').expect("WxH");
        let (w, h): (f64, f64) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w > 0.0 && h > 0.0, "{}: the picture is {size}", s.name);
    }
    assert_eq!(
        lines.next(),
        Some("errors 0 "),
        "the page saw errors: {check}"
    );
    let log = &dump.stderr;
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "the console shows:\n{}",
        console.join("\n")
    );

    let shot = out.join("index.png");
    run_chromium(
        &browser,
        &out.join("profile-shot"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".to_owned(),
            "--hide-scrollbars".to_owned(),
        ],
        &copy,
    );
    let png = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(png > 0, "no screenshot at {}", shot.display());
    println!("screenshot: {}", shot.display());
}
