//! What the first request after a cold start pays for state built lazily on first use, in the
//! release profile: the first and the second use of each, three rounds in one process.
//!
//!     cargo run --release -p agent-hosting-bench --bin first-use
//!
//! Measured 2026-11-23: the first image reference check costs about 85 ms (oci-spec compiles its
//! reference regex, whose Unicode `\w{0,127}` tag class makes a very large automaton), every
//! later one about 10 µs. See docs/performance.md.

use std::time::{Duration, Instant};

fn timed(work: impl FnOnce()) -> Duration {
    let started = Instant::now();
    work();
    started.elapsed()
}

fn main() {
    println!("| state | first use | second use |");
    println!("|---|---:|---:|");
    let image = |reference: &'static str| {
        move || {
            let _ = shared::validation::check_image_reference(reference);
        }
    };
    let first = timed(image("ghcr.io/acme/agent:1.0"));
    let second = timed(image("ghcr.io/acme/agent:1.1"));
    println!("| image reference (oci-spec regex) | {first:.2?} | {second:.2?} |");
    let first = timed(|| {
        std::hint::black_box(uuid::Uuid::new_v4());
    });
    let second = timed(|| {
        std::hint::black_box(uuid::Uuid::new_v4());
    });
    println!("| uuid v4 (getrandom) | {first:.2?} | {second:.2?} |");
}
