//! Programs that teach the watchdog (being built; see the README).
