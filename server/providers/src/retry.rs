//! Attempts, retries, idle timeouts and cancellation: what every provider shares. A `Backend`
//! makes one attempt; `with_retries` drives attempts until one finishes, fails for good, or
//! is cancelled.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::{ModelConfig, RetryPolicy};
use crate::error::{ProviderError, ResponseLimit, Result};
use crate::model::{ChatRequest, StreamEvent};

/// What an attempt reports: its events, and the raw body bytes as they arrive. Bytes come apart
/// from events because a decoder may hold many chunks before it completes one (a tool call's
/// arguments streamed in fragments): the idle timeout and the byte cap count bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Progress {
    Event(StreamEvent),
    /// This many body bytes arrived.
    Received(usize),
}

/// One attempt at a request: its progress, ending with the `Finished` event or an error.
/// Dropping the stream abandons the attempt (and its connection).
pub(crate) trait Backend: Send + Sync {
    fn attempt(&self, request: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>>;
}

/// How long and how much one attempt may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Longest wait for anything (a byte or an event) before the attempt fails, retryably.
    pub idle_timeout: Duration,
    /// Body bytes one attempt may receive before it is stopped for good.
    pub max_response_bytes: u64,
    /// Time one attempt may run before it is stopped for good.
    pub max_response_time: Duration,
}

impl Limits {
    pub(crate) fn of(config: &ModelConfig) -> Limits {
        Limits {
            idle_timeout: config.idle_timeout,
            max_response_bytes: config.max_response_bytes,
            max_response_time: config.max_response_time,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retries + 1`, never longer than `max_delay`; `None` when the
    /// provider asked for a longer wait than `max_delay` (then the error is returned instead of
    /// waited out).
    pub(crate) fn delay(&self, retries: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(asked) = retry_after {
            return (asked <= self.max_delay).then_some(asked);
        }
        let exponential = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retries));
        let capped = exponential.min(self.max_delay);
        // ±25 % so that clients that failed together don't retry together, drawn from a range
        // cut at `max_delay` so that the cap holds (at the cap the jitter only shortens).
        let shortest = capped.mul_f64(0.75);
        let longest = capped.mul_f64(1.25).min(self.max_delay);
        Some(shortest + (longest - shortest).mul_f64(fastrand::f64()))
    }
}

enum Next {
    Cancelled,
    IdleTimeout,
    TooLong,
    Item(Option<Result<Progress>>),
}

/// Runs `request` on `backend`, retrying retryable errors as `policy` says. Each retry is
/// announced with a `StreamEvent::Retrying` (after which the consumer discards what it got so
/// far). Waiting longer than `limits.idle_timeout` for the next bytes fails the attempt; passing
/// `limits.max_response_bytes` or `max_response_time` ends the stream with
/// `ProviderError::ResponseLimitExceeded`. Cancelling `cancel` ends the stream with
/// `ProviderError::Cancelled` and drops the connection.
pub(crate) fn with_retries(
    backend: Arc<dyn Backend>,
    request: Arc<ChatRequest>,
    policy: RetryPolicy,
    limits: Limits,
    cancel: CancellationToken,
) -> BoxStream<'static, Result<StreamEvent>> {
    Box::pin(async_stream::stream! {
        let mut retries = 0u32;
        loop {
            let mut attempt = backend.attempt(Arc::clone(&request));
            // A cap too large to add to now is no cap (`sleep_until` takes the far future).
            let deadline = tokio::time::Instant::now()
                .checked_add(limits.max_response_time)
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365 * 30));
            let too_long = tokio::time::sleep_until(deadline);
            tokio::pin!(too_long);
            let mut received = 0u64;
            let error = loop {
                let next = tokio::select! {
                    biased;
                    () = cancel.cancelled() => Next::Cancelled,
                    () = &mut too_long => Next::TooLong,
                    next = tokio::time::timeout(limits.idle_timeout, attempt.next()) => match next {
                        Ok(item) => Next::Item(item),
                        Err(_) => Next::IdleTimeout,
                    },
                };
                match next {
                    Next::Cancelled => {
                        yield Err(ProviderError::Cancelled);
                        return;
                    }
                    Next::IdleTimeout => {
                        break ProviderError::IdleTimeout { idle: limits.idle_timeout }
                    }
                    Next::TooLong => {
                        break ProviderError::ResponseLimitExceeded {
                            limit: ResponseLimit::Time(limits.max_response_time),
                        }
                    }
                    Next::Item(Some(Ok(Progress::Received(bytes)))) => {
                        received = received.saturating_add(bytes as u64);
                        if received > limits.max_response_bytes {
                            break ProviderError::ResponseLimitExceeded {
                                limit: ResponseLimit::Bytes(limits.max_response_bytes),
                            };
                        }
                    }
                    Next::Item(Some(Ok(Progress::Event(event)))) => {
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
        fn attempt(&self, _: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>> {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            let mut outcomes = self.outcomes.lock().unwrap();
            let outcome = if outcomes.is_empty() {
                Vec::new()
            } else {
                outcomes.remove(0)
            };
            Box::pin(futures::stream::iter(
                outcome.into_iter().map(|item| item.map(Progress::Event)),
            ))
        }
    }

    /// Plays the same steps on every attempt, each after its pause, then hangs; counts the
    /// attempts. Run on paused time (`start_paused`), the pauses take no real time.
    struct Paced {
        attempts: AtomicUsize,
        steps: Vec<(Duration, Progress)>,
    }

    impl Backend for Paced {
        fn attempt(&self, _: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>> {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            let steps = self.steps.clone();
            Box::pin(async_stream::stream! {
                for (pause, progress) in steps {
                    tokio::time::sleep(pause).await;
                    yield Ok(progress);
                }
                futures::future::pending::<()>().await;
            })
        }
    }

    fn limits(idle_timeout: Duration) -> Limits {
        Limits {
            idle_timeout,
            max_response_bytes: u64::MAX,
            max_response_time: Duration::MAX,
        }
    }

    /// Runs `steps` (on every attempt) under `limits`, with up to 3 retries; the events and the
    /// number of attempts.
    async fn run_paced(
        steps: Vec<(Duration, Progress)>,
        limits: Limits,
    ) -> (Vec<Result<StreamEvent>>, usize) {
        let backend = Arc::new(Paced {
            attempts: AtomicUsize::new(0),
            steps,
        });
        let stream = with_retries(
            backend.clone(),
            Arc::new(ChatRequest::default()),
            policy(3),
            limits,
            CancellationToken::new(),
        );
        let events = stream.collect().await;
        (events, backend.attempts.load(Ordering::SeqCst))
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
            limits(Duration::from_secs(5)),
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
            fn attempt(&self, _: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>> {
                Box::pin(futures::stream::pending())
            }
        }
        let cancel = CancellationToken::new();
        let mut stream = with_retries(
            Arc::new(Silent),
            Arc::new(ChatRequest::default()),
            policy(3),
            limits(Duration::from_secs(60)),
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
            limits(Duration::from_secs(60)),
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

    #[tokio::test(start_paused = true)]
    async fn bytes_that_complete_no_event_still_reset_the_idle_timeout() {
        // A tool call's arguments in fragments 0.6 s apart, for 6 s, under a 1 s idle timeout:
        // the decoder yields nothing until the call is whole, but bytes keep arriving.
        let mut steps: Vec<(Duration, Progress)> = (0..10)
            .map(|_| (Duration::from_millis(600), Progress::Received(40)))
            .collect();
        let call = StreamEvent::ToolCall(crate::model::ToolCall {
            id: "call_1".into(),
            name: "write_file".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
            signature: None,
        });
        steps.push((Duration::ZERO, Progress::Event(call.clone())));
        steps.push((Duration::ZERO, Progress::Event(finished().unwrap())));
        let (events, attempts) = run_paced(steps, limits(Duration::from_secs(1))).await;
        assert_eq!(events, vec![Ok(call), finished()]);
        assert_eq!(attempts, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn silence_between_fragments_still_times_out() {
        let steps = vec![
            (Duration::from_millis(600), Progress::Received(40)),
            (Duration::from_millis(1500), Progress::Received(40)),
        ];
        let idle = Duration::from_secs(1);
        let (events, attempts) = run_paced(steps, limits(idle)).await;
        assert_eq!(
            events.last(),
            Some(&Err(ProviderError::IdleTimeout { idle }))
        );
        assert_eq!(attempts, 4, "an idle timeout is retried");
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_past_its_byte_cap_is_stopped_and_not_retried() {
        // Thoughts streamed without end: 1 KiB every 10 ms.
        let steps = (0..1000)
            .map(|_| (Duration::from_millis(10), Progress::Received(1024)))
            .collect();
        let capped = Limits {
            max_response_bytes: 64 * 1024,
            ..limits(Duration::from_secs(1))
        };
        let (events, attempts) = run_paced(steps, capped).await;
        let stopped = ProviderError::ResponseLimitExceeded {
            limit: ResponseLimit::Bytes(64 * 1024),
        };
        assert_eq!(events, vec![Err(stopped.clone())]);
        assert_eq!(attempts, 1);
        assert_eq!(stopped.kind(), "response_limit_exceeded");
        assert!(!stopped.is_retryable());
        assert_eq!(
            stopped.to_string(),
            "the model's response was stopped after 65536 bytes, the most \
             `network.maxResponseBytes` allows; the model may be stuck thinking or repeating \
             itself. If its answers really are this long, raise `network.maxResponseBytes` in \
             settings.json"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_past_its_time_cap_is_stopped_and_not_retried() {
        // A slow runaway: 10 bytes every half second never reaches the byte cap, and never
        // lets the idle timeout fire.
        let steps = (0..1000)
            .map(|_| (Duration::from_millis(500), Progress::Received(10)))
            .collect();
        let capped = Limits {
            max_response_bytes: 1024 * 1024,
            max_response_time: Duration::from_secs(60),
            ..limits(Duration::from_secs(1))
        };
        let started = tokio::time::Instant::now();
        let (events, attempts) = run_paced(steps, capped).await;
        assert_eq!(
            events,
            vec![Err(ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Time(Duration::from_secs(60)),
            })]
        );
        assert_eq!(attempts, 1);
        assert_eq!(started.elapsed(), Duration::from_secs(60));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_never_passes_the_cap() {
        let policy = RetryPolicy {
            max_retries: 10,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
        };
        // Many draws, since the jitter is random: half of them passed the cap before.
        for _ in 0..1000 {
            for (retries, shortest, longest) in [
                (0, 0.75, 1.25),
                (1, 1.5, 2.5),
                (2, 3.0, 5.0),
                (3, 6.0, 10.0),
                (6, 7.5, 10.0),
                (30, 7.5, 10.0),
            ] {
                let delay = policy.delay(retries, None).unwrap().as_secs_f64();
                assert!(
                    (shortest..=longest).contains(&delay),
                    "retry {retries}: {delay}s"
                );
            }
        }
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(10))),
            Some(Duration::from_secs(10))
        );
        assert_eq!(policy.delay(0, Some(Duration::from_millis(10_001))), None);
    }
}
