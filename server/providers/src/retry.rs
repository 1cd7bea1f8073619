//! Attempts, retries, idle timeouts and cancellation: what every provider shares. A `Backend`
//! makes one attempt; `with_retries` drives attempts until one finishes, fails for good, or
//! is cancelled.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::RetryPolicy;
use crate::error::{ProviderError, Result};
use crate::model::{ChatRequest, StreamEvent};

/// One attempt at a request: its events, ending with `Finished` or an error. Dropping the
/// stream abandons the attempt (and its connection).
pub(crate) trait Backend: Send + Sync {
    fn attempt(&self, request: Arc<ChatRequest>) -> BoxStream<'static, Result<StreamEvent>>;
}

impl RetryPolicy {
    /// The wait before retry number `retries + 1`, or `None` when the provider asked for a
    /// longer wait than `max_delay` (then the error is returned instead of waited out).
    pub(crate) fn delay(&self, retries: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(asked) = retry_after {
            return (asked <= self.max_delay).then_some(asked);
        }
        let exponential = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retries));
        let capped = exponential.min(self.max_delay);
        // ±25 % so that clients that failed together don't retry together.
        Some(capped.mul_f64(0.75 + fastrand::f64() * 0.5))
    }
}

enum Next {
    Cancelled,
    IdleTimeout,
    Item(Option<Result<StreamEvent>>),
}

/// Runs `request` on `backend`, retrying retryable errors as `policy` says. Each retry is
/// announced with a `StreamEvent::Retrying` (after which the consumer discards what it got so
/// far). Waiting longer than `idle_timeout` for the next event fails the attempt. Cancelling
/// `cancel` ends the stream with `ProviderError::Cancelled` and drops the connection.
pub(crate) fn with_retries(
    backend: Arc<dyn Backend>,
    request: Arc<ChatRequest>,
    policy: RetryPolicy,
    idle_timeout: Duration,
    cancel: CancellationToken,
) -> BoxStream<'static, Result<StreamEvent>> {
    Box::pin(async_stream::stream! {
        let mut retries = 0u32;
        loop {
            let mut attempt = backend.attempt(Arc::clone(&request));
            let error = loop {
                let next = tokio::select! {
                    biased;
                    () = cancel.cancelled() => Next::Cancelled,
                    next = tokio::time::timeout(idle_timeout, attempt.next()) => match next {
                        Ok(item) => Next::Item(item),
                        Err(_) => Next::IdleTimeout,
                    },
                };
                match next {
                    Next::Cancelled => {
                        yield Err(ProviderError::Cancelled);
                        return;
                    }
                    Next::IdleTimeout => break ProviderError::IdleTimeout { idle: idle_timeout },
                    Next::Item(Some(Ok(event))) => {
                        let finished = matches!(event, StreamEvent::Finished { .. });
                        yield Ok(event);
                        if finished {
                            return;
                        }
                    }
                    Next::Item(Some(Err(error))) => break error,
                    Next::Item(None) => {
                        break ProviderError::TruncatedStream {
                            message: "the response ended without a finish event".into(),
                        }
                    }
                }
            };
            drop(attempt);
            let delay = if error.is_retryable() && retries < policy.max_retries {
                policy.delay(retries, error.retry_after())
            } else {
                None
            };
            let Some(delay) = delay else {
                tracing::warn!(kind = error.kind(), retries, "model request failed: {error}");
                yield Err(error);
                return;
            };
            retries += 1;
            tracing::warn!(
                kind = error.kind(),
                retry = retries,
                delay_ms = delay.as_millis() as u64,
                "model request failed, retrying: {error}"
            );
            yield Ok(StreamEvent::Retrying { attempt: retries, delay, error: error.to_string() });
            let cancelled = tokio::select! {
                biased;
                () = cancel.cancelled() => true,
                () = tokio::time::sleep(delay) => false,
            };
            if cancelled {
                yield Err(ProviderError::Cancelled);
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::*;
    use crate::model::FinishReason;

    /// Plays one scripted outcome per attempt and counts the attempts.
    struct Scripted {
        attempts: AtomicUsize,
        outcomes: Mutex<Vec<Vec<Result<StreamEvent>>>>,
    }

    impl Backend for Scripted {
        fn attempt(&self, _: Arc<ChatRequest>) -> BoxStream<'static, Result<StreamEvent>> {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            let mut outcomes = self.outcomes.lock().unwrap();
            let outcome = if outcomes.is_empty() {
                Vec::new()
            } else {
                outcomes.remove(0)
            };
            Box::pin(futures::stream::iter(outcome))
        }
    }

    fn policy(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(50),
        }
    }

    fn text(text: &str) -> Result<StreamEvent> {
        Ok(StreamEvent::TextDelta { text: text.into() })
    }

    fn finished() -> Result<StreamEvent> {
        Ok(StreamEvent::Finished {
            reason: FinishReason::Stop,
        })
    }

    async fn run(
        outcomes: Vec<Vec<Result<StreamEvent>>>,
        max_retries: u32,
    ) -> (Vec<Result<StreamEvent>>, usize) {
        let backend = Arc::new(Scripted {
            attempts: AtomicUsize::new(0),
            outcomes: Mutex::new(outcomes),
        });
        let stream = with_retries(
            backend.clone(),
            Arc::new(ChatRequest::default()),
            policy(max_retries),
            Duration::from_secs(5),
            CancellationToken::new(),
        );
        let events = stream.collect().await;
        (events, backend.attempts.load(Ordering::SeqCst))
    }

    fn network() -> ProviderError {
        ProviderError::Network {
            message: "connection reset".into(),
        }
    }

    #[tokio::test]
    async fn a_retryable_error_mid_stream_is_retried_and_announced() {
        let (events, attempts) = run(
            vec![
                vec![text("par"), Err(network())],
                vec![text("whole"), finished()],
            ],
            3,
        )
        .await;
        assert_eq!(attempts, 2);
        assert_eq!(events.len(), 4);
        assert!(matches!(
            &events[1],
            Ok(StreamEvent::Retrying { attempt: 1, .. })
        ));
        assert_eq!(events[3], finished());
    }

    #[tokio::test]
    async fn retries_stop_at_the_limit() {
        let failing = || vec![Err(network())];
        let (events, attempts) = run(vec![failing(), failing(), failing(), failing()], 2).await;
        assert_eq!(attempts, 3);
        assert_eq!(events.last(), Some(&Err(network())));
    }

    #[tokio::test]
    async fn errors_that_cannot_succeed_are_not_retried() {
        let denied = ProviderError::Authentication {
            message: "bad key".into(),
        };
        let (events, attempts) = run(vec![vec![Err(denied.clone())]], 5).await;
        assert_eq!(attempts, 1);
        assert_eq!(events, vec![Err(denied)]);
    }

    #[tokio::test]
    async fn a_retry_after_longer_than_the_maximum_is_not_waited_for() {
        let limited = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(3600)),
            message: "slow down".into(),
        };
        let (events, attempts) = run(vec![vec![Err(limited.clone())]], 5).await;
        assert_eq!(attempts, 1);
        assert_eq!(events, vec![Err(limited)]);
    }

    #[tokio::test]
    async fn an_attempt_that_ends_without_finishing_is_truncated() {
        let (events, _) = run(vec![vec![text("a")]], 0).await;
        assert!(matches!(
            events.last(),
            Some(Err(ProviderError::TruncatedStream { .. }))
        ));
    }

    #[tokio::test]
    async fn cancelling_ends_the_stream_with_cancelled() {
        struct Silent;
        impl Backend for Silent {
            fn attempt(&self, _: Arc<ChatRequest>) -> BoxStream<'static, Result<StreamEvent>> {
                Box::pin(futures::stream::pending())
            }
        }
        let cancel = CancellationToken::new();
        let mut stream = with_retries(
            Arc::new(Silent),
            Arc::new(ChatRequest::default()),
            policy(3),
            Duration::from_secs(60),
            cancel.clone(),
        );
        cancel.cancel();
        assert_eq!(stream.next().await, Some(Err(ProviderError::Cancelled)));
        assert_eq!(stream.next().await, None);
    }

    #[tokio::test]
    async fn cancelling_while_waiting_to_retry_ends_at_once() {
        let backend = Arc::new(Scripted {
            attempts: AtomicUsize::new(0),
            outcomes: Mutex::new(vec![vec![Err(network())]]),
        });
        let cancel = CancellationToken::new();
        let slow = RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(7200),
        };
        let mut stream = with_retries(
            backend.clone(),
            Arc::new(ChatRequest::default()),
            slow,
            Duration::from_secs(60),
            cancel.clone(),
        );
        let retrying = stream.next().await;
        assert!(matches!(
            retrying,
            Some(Ok(StreamEvent::Retrying { attempt: 1, .. }))
        ));
        cancel.cancel();
        assert_eq!(stream.next().await, Some(Err(ProviderError::Cancelled)));
        assert_eq!(stream.next().await, None);
        assert_eq!(backend.attempts.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
        };
        for (retries, base) in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 10.0)] {
            let delay = policy.delay(retries, None).unwrap().as_secs_f64();
            assert!(
                (base * 0.75..=base * 1.25).contains(&delay),
                "retry {retries}: {delay}s"
            );
        }
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
    }
}
