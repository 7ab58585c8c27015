//! Bounded waiting for the tests: every retry, poll or cursor walk gives up after a number of
//! tries and a time, whichever comes first, and fails saying what it waited for and what its last
//! try saw. A regression that never lets the awaited thing happen (a store that answers 503
//! forever, a cursor that never ends, a server that never starts) fails its test instead of
//! hanging CI.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

use lambda_http::{Body, Response};

/// At most `tries` tries, all within `within`.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub tries: u32,
    pub within: Duration,
}

impl Bound {
    pub const fn new(tries: u32, within: Duration) -> Self {
        Bound { tries, within }
    }

    /// A budget of this bound for waiting on `what`, its clock started.
    pub fn start(self, what: impl Into<String>) -> Budget {
        Budget {
            what: what.into(),
            bound: self,
            started: Instant::now(),
            tried: 0,
            last: "no try ended".to_owned(),
        }
    }
}

/// What one try found.
pub enum Try<T> {
    /// What was waited for.
    Done(T),
    /// Not yet: why, and how long to wait before the next try.
    Again { why: String, wait: Duration },
}

/// The tries and the time left for waiting on one thing; spending past either panics.
#[derive(Debug)]
pub struct Budget {
    what: String,
    bound: Bound,
    started: Instant,
    tried: u32,
    last: String,
}

impl Budget {
    /// Counts one more try, or panics if the bound is spent.
    pub fn spend(&mut self) {
        if self.tried >= self.bound.tries || self.remaining().is_zero() {
            self.give_up();
        }
        self.tried += 1;
    }

    /// Why the last try fell short, for the message if the bound is spent.
    pub fn note(&mut self, why: impl Display) {
        self.last = why.to_string();
    }

    /// The time left.
    pub fn remaining(&self) -> Duration {
        self.bound.within.saturating_sub(self.started.elapsed())
    }

    /// `wait`, or a panic now if the next try would come after the bound's time.
    fn pause(&self, wait: Duration) -> Duration {
        if wait >= self.remaining() {
            self.give_up();
        }
        wait
    }

    fn give_up(&self) -> ! {
        panic!(
            "gave up waiting for {} after {} tries in {:.1?} (bound: {} tries, {:?}); the last: {}",
            self.what,
            self.tried,
            self.started.elapsed(),
            self.bound.tries,
            self.bound.within,
            self.last
        )
    }
}

/// Tries `attempt` until it is done, pausing as each try says; panics once `bound` is spent,
/// also while a try is still running.
pub async fn until<T, F, Fut>(what: &str, bound: Bound, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Try<T>>,
{
    let mut budget = bound.start(what);
    loop {
        budget.spend();
        match tokio::time::timeout(budget.remaining(), attempt()).await {
            Ok(Try::Done(value)) => return value,
            Ok(Try::Again { why, wait }) => {
                budget.note(why);
                tokio::time::sleep(budget.pause(wait)).await;
            }
            Err(_) => {
                budget.note("a try still running when the time ran out");
                budget.give_up();
            }
        }
    }
}

/// [`until`] for a test's synchronous code (a `Drop`, a thread); each try must return promptly.
pub fn until_blocking<T>(what: &str, bound: Bound, mut attempt: impl FnMut() -> Try<T>) -> T {
    let mut budget = bound.start(what);
    loop {
        budget.spend();
        match attempt() {
            Try::Done(value) => return value,
            Try::Again { why, wait } => {
                budget.note(why);
                std::thread::sleep(budget.pause(wait));
            }
        }
    }
}

/// Sends a request until it is answered other than 503, waiting the `Retry-After` each 503 must
/// carry, as the anchor's clients do; panics once `bound` is spent.
pub async fn retried_after_503<F, Fut>(what: &str, bound: Bound, send: F) -> Response<Body>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Response<Body>>,
{
    let send = &send;
    until(what, bound, move || async move {
        let response = send().await;
        if response.status() != 503 {
            return Try::Done(response);
        }
        let seconds: u64 = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok()?.parse().ok())
            .expect("a 503 says when to come back");
        Try::Again {
            why: format!("503 {}", String::from_utf8_lossy(response.body().as_ref())),
            wait: Duration::from_secs(seconds),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unavailable() -> Response<Body> {
        Response::builder()
            .status(503)
            .header("retry-after", "0")
            .body(Body::from(r#"{"code":"SERVICE_UNAVAILABLE"}"#))
            .unwrap()
    }

    #[tokio::test]
    #[should_panic(expected = "gave up waiting for an update after 3 tries in")]
    async fn a_service_answering_503_forever_fails_the_retry_instead_of_hanging_it() {
        let bound = Bound::new(3, Duration::from_secs(10));
        retried_after_503("an update", bound, || async { unavailable() }).await;
    }

    #[tokio::test]
    #[should_panic(expected = r#"the last: 503 {"code":"SERVICE_UNAVAILABLE"}"#)]
    async fn the_failure_says_what_the_last_try_saw() {
        let bound = Bound::new(2, Duration::from_secs(10));
        retried_after_503("an update", bound, || async { unavailable() }).await;
    }

    #[tokio::test]
    async fn a_503_then_an_answer_is_the_answer() {
        let sent = std::sync::atomic::AtomicU32::new(0);
        let answer = retried_after_503("an update", Bound::new(3, Duration::from_secs(10)), || {
            let first = sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0;
            async move {
                match first {
                    true => unavailable(),
                    false => Response::builder().status(200).body(Body::Empty).unwrap(),
                }
            }
        })
        .await;
        assert_eq!(answer.status(), 200);
    }

    #[tokio::test]
    #[should_panic(expected = "gave up waiting for a ready agent after 1 tries")]
    async fn a_wait_past_the_time_bound_fails_at_once() {
        let bound = Bound::new(100, Duration::from_millis(200));
        until::<(), _, _>("a ready agent", bound, || async {
            Try::Again {
                why: "not ready".to_owned(),
                wait: Duration::from_secs(60),
            }
        })
        .await;
    }

    #[tokio::test]
    #[should_panic(expected = "a try still running when the time ran out")]
    async fn a_try_that_never_ends_is_cut_at_the_time_bound() {
        let bound = Bound::new(3, Duration::from_millis(100));
        until::<(), _, _>("an answer", bound, std::future::pending).await;
    }

    #[test]
    #[should_panic(expected = "gave up waiting for a free port after 4 tries")]
    fn a_blocking_wait_is_bounded_too() {
        let bound = Bound::new(4, Duration::from_secs(10));
        until_blocking::<()>("a free port", bound, || Try::Again {
            why: "still taken".to_owned(),
            wait: Duration::from_millis(1),
        });
    }

    #[test]
    #[should_panic(expected = "gave up waiting for the last page after 5 tries")]
    fn a_budget_spent_in_a_loop_ends_it() {
        let mut pages = Bound::new(5, Duration::from_secs(10)).start("the last page");
        loop {
            pages.spend();
        }
    }
}
