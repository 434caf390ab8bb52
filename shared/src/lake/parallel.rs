//! Store requests of a batch made several at a time. A batch touches each of its uploads'
//! records, manifests and landing files: one after another, requests to S3 (tens of
//! milliseconds each) would take a batch of thousands past a function's time limit.

/// Requests in flight at once to an object store over the network.
pub(super) const IN_FLIGHT: usize = 16;

/// `f` of every item, in the items' order, computed on up to `threads` threads (one: on this
/// one). A local directory is best read on one: its requests cost CPU, not waiting, and
/// threads only contend for the file system's locks.
pub(super) fn map<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if items.len() <= 1 || threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let per_thread = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(per_thread)
            .map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(results) => results,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u32> = (0..1000).collect();
        for threads in [1, 3, 16] {
            let doubled = super::map(threads, &items, |i| i * 2);
            assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
            assert!(super::map(threads, &[] as &[u32], |i| *i).is_empty());
        }
    }
}
