//! A data plane restarted over its running replicas (contract section 12, "Restarts"; this
//! build keeps no table, so only idle replicas are adopted).

use serde_json::json;

use super::{Harness, Running, agent};

/// After a restart, an idle replica of a deployment still wanted is counted in the reserve
/// (none is started beside it), and one of an agent the data plane no longer knows is stopped.
pub async fn a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let (kept, forgotten) = (agent("kept"), agent("forgotten"));
    let image = harness.example_image();
    let wanted = running.deploy(&kept, &image, (1, 2), json!({})).await;
    let unknown = running.deploy(&forgotten, &image, (1, 2), json!({})).await;
    running.ready(&wanted).await;
    running.ready(&unknown).await;
    let adopted = running.until_replicas(&wanted, 1).await;
    let stray = running.until_replicas(&unknown, 1).await;
    let running = running.restart(harness, |agent| agent.name == "kept").await;
    running
        .until("the unknown agent's replica stopped", |views| {
            views.iter().all(|view| view.id != stray[0])
        })
        .await;
    running.ready(&wanted).await;
    assert_eq!(running.until_replicas(&wanted, 1).await, adopted);
    running.finish().await;
}
