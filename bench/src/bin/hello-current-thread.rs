//! hello-lambda on tokio's current-thread runtime, as the functions run: the baseline for their
//! init with the same runtime (hello-lambda keeps lambda_runtime's own `#[tokio::main]`).

use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    run(service_fn(
        |event: LambdaEvent<serde_json::Value>| async move { Ok::<_, Error>(event.payload) },
    ))
    .await
}
