//! Deterministic concurrency inside one task.

use super::LocalBoxFuture;
use std::task::Poll;

/// Run every future concurrently on the current task and return their outputs in input
/// order. Each wake-up polls the unfinished futures in index order, so the interleaving is
/// deterministic (no `tokio::spawn`, no randomised `select!`).
pub async fn join_all<'a, T>(futures: Vec<LocalBoxFuture<'a, T>>) -> Vec<T> {
    let mut futures: Vec<Option<LocalBoxFuture<'a, T>>> = futures.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, result) in futures.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *result = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|v| v.expect("every future completed"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn join_all_keeps_order_and_runs_concurrently() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let t0 = tokio::time::Instant::now();
            let futures: Vec<LocalBoxFuture<'_, u64>> = [30u64, 10, 20]
                .into_iter()
                .map(|ms| {
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        ms
                    }) as LocalBoxFuture<'_, u64>
                })
                .collect();
            assert_eq!(join_all(futures).await, vec![30, 10, 20]);
            // Concurrent: the slowest, not the sum.
            assert_eq!(t0.elapsed(), Duration::from_millis(30));
            assert!(join_all::<u8>(Vec::new()).await.is_empty());
        });
    }
}
