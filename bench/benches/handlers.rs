//! Warm CPU time of the create handler without I/O: the gateway's event for a fully specified
//! agent, validated, its manifest built and the answer serialized, on the in-memory store (a
//! fresh one per iteration, made outside the timing).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use shared::store::memory::MemoryStore;

fn event(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR")))
        .expect("an events/ fixture")
}

fn create_handler(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    for fixture in [
        "create-agent.json",
        "create-agent-full.json",
        "create-agent-invalid.json",
    ] {
        let text = event(fixture);
        c.bench_function(&format!("create handler, {fixture}"), |b| {
            b.iter_batched(
                || {
                    let request = shared::lambda::request_from_event(&text).expect("the fixture");
                    (MemoryStore::default(), request)
                },
                |(store, request)| {
                    runtime.block_on(create_agent::handle(
                        &store,
                        &store,
                        shared::manifest::DeploymentMode::Simulated,
                        request,
                    ))
                },
                BatchSize::SmallInput,
            )
        });
    }
}

criterion_group!(benches, create_handler);
criterion_main!(benches);
