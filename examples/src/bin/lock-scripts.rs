//! Prints the Lua body of one of the lock's scripts, to load it into any Redis (or the fake's
//! server, which runs every body on its embedded Lua).
//!
//! `cargo run -q -p examples --bin lock-scripts -- acquire` prints the acquire script's body
//! exactly, final line feed included (a `$(...)` would strip it and change the SHA1); with no name
//! it lists the fifteen scripts' names, one a line.

use std::process::ExitCode;

fn main() -> ExitCode {
    let names = || lock_core::script::all().map(|s| s.name);
    let mut args = std::env::args().skip(1);
    let (Some(name), None) = (args.next(), args.next()) else {
        for name in names() {
            println!("{name}");
        }
        return ExitCode::SUCCESS;
    };
    match lock_core::script::all()
        .into_iter()
        .find(|s| s.name == name)
    {
        Some(script) => {
            print!("{}", script.body);
            ExitCode::SUCCESS
        }
        None => {
            eprintln!(
                "no script named {name:?}; the scripts are {}",
                names().join(", ")
            );
            ExitCode::from(2)
        }
    }
}
