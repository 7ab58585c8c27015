//! What the first request after a cold start pays for state built lazily on first use, in the
//! release profile: the first and the second use of each, in one process.
//!
//!     cargo run --release -p agent-hosting-bench --bin first-use
//!
//! The image reference check compiles its pattern on first use. With oci-spec's Unicode-aware
//! regex that cost 67-88 ms (its `\w{0,127}` tag class makes a very large automaton); with the
//! ASCII grammar on regex-lite it is a fraction of a millisecond. See docs/performance.md.
//!
//! The DynamoDB client is built at init, not on first use, but what its first construction costs
//! over a second one is the same kind of figure: the SDK's one-time work (the TLS configuration,
//! built and checked when the client is; the endpoint partition table, parsed from JSON once per
//! process) and the first touch of its code. It is the floor of every function's init beyond
//! hello-world's (`hello-dynamodb` in make bench).

use std::time::{Duration, Instant};

fn timed(work: impl FnOnce()) -> Duration {
    let started = Instant::now();
    work();
    started.elapsed()
}

fn main() {
    println!("| state | first use | second use |");
    println!("|---|---:|---:|");
    // DynamoDB Local's settings: the same construction as on AWS but for the endpoint, and no
    // credentials needed in the environment.
    let build_client = || {
        std::hint::black_box(shared::aws::dynamodb_client(Some("http://127.0.0.1:8000")).ok());
    };
    let first = timed(build_client);
    let second = timed(build_client);
    println!("| DynamoDB client (shared::aws::dynamodb_client) | {first:.2?} | {second:.2?} |");
    let image = |reference: &'static str| {
        move || {
            let _ = shared::validation::check_image_reference(reference);
        }
    };
    let first = timed(image("ghcr.io/acme/agent:1.0"));
    let second = timed(image("ghcr.io/acme/agent:1.1"));
    println!("| image reference (grammar on regex-lite) | {first:.2?} | {second:.2?} |");
    let first = timed(|| {
        std::hint::black_box(uuid::Uuid::new_v4());
    });
    let second = timed(|| {
        std::hint::black_box(uuid::Uuid::new_v4());
    });
    println!("| uuid v4 (getrandom) | {first:.2?} | {second:.2?} |");
}
