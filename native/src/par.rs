//! The thread count every parallel kernel uses, and how work is cut for it.
//!
//! One setting: [`threads`] is what [`set_threads`] last set (the Python side sets it from
//! replaykit's thread setting, `replaykit._base.native.threads()`: the cores the process may use,
//! capped by `REPLAYKIT_THREADS` and a call's `threads=`), else the cores this process may
//! use (`available_parallelism`, which honours the CPU affinity mask). No kernel caps it
//! further. Work is cut into about [`CHUNKS_PER_THREAD`] pieces per thread (by rows or
//! bytes, never fewer than a minimum size) that the threads take one at a time, so a slow
//! piece (long rows, a busy core) does not leave the others idle and the kernels keep
//! scaling with more cores instead of splitting into a fixed number of halves.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Pieces of work per thread (see the module docs).
pub const CHUNKS_PER_THREAD: usize = 4;

/// The cores this process may use (its affinity mask on Linux); 1 when unknown.
pub fn available() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The thread count kernels use: the last [`set_threads`], else [`available`].
pub fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => available(),
        n => n,
    }
}

/// Set the thread count ([`threads`]); 0 goes back to [`available`].
pub fn set_threads(n: usize) {
    THREADS.store(n, Ordering::Relaxed);
}

/// `requested` when positive, else [`threads`].
pub fn resolve(requested: usize) -> usize {
    if requested == 0 {
        threads()
    } else {
        requested
    }
}

/// `0..n` cut into about [`CHUNKS_PER_THREAD`] ranges per thread, each at least `min_per`
/// long (one range when `threads` is 1 or `n` is small); empty when `n` is 0.
pub fn ranges(n: usize, threads: usize, min_per: usize) -> Vec<(usize, usize)> {
    if n == 0 {
        return Vec::new();
    }
    let want = if threads <= 1 {
        1
    } else {
        threads * CHUNKS_PER_THREAD
    };
    let k = want.min(n.div_ceil(min_per.max(1))).max(1);
    (0..k).map(|i| (n * i / k, n * (i + 1) / k)).collect()
}

/// Run `f` on every task on up to `threads` threads (this one included), each thread taking
/// the next task when it finishes one. A panic in a task is raised again here.
pub fn run_tasks<T: Send>(tasks: Vec<T>, threads: usize, f: impl Fn(T) + Sync) {
    let t = threads.max(1).min(tasks.len());
    if t <= 1 {
        tasks.into_iter().for_each(f);
        return;
    }
    let queue = Mutex::new(tasks.into_iter());
    let work = || loop {
        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
        match next {
            Some(task) => f(task),
            None => break,
        }
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..t).map(|_| s.spawn(work)).collect();
        work();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

/// `f(lo, hi)` of every range, computed on up to `threads` threads (see [`run_tasks`]),
/// results in range order.
pub fn map_ranges<T: Send>(
    ranges: &[(usize, usize)],
    threads: usize,
    f: impl Fn(usize, usize) -> T + Sync,
) -> Vec<T> {
    if threads <= 1 || ranges.len() <= 1 {
        return ranges.iter().map(|&(a, b)| f(a, b)).collect();
    }
    let slots: Vec<Mutex<Option<T>>> = ranges.iter().map(|_| Mutex::new(None)).collect();
    run_tasks((0..ranges.len()).collect(), threads, |k| {
        let (a, b) = ranges[k];
        let r = f(a, b);
        *slots[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every range is computed")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_in_order_and_scale_with_threads() {
        for n in [0usize, 1, 7, 100, 10_000, 1_000_003] {
            for t in [1usize, 2, 3, 8, 64] {
                let r = ranges(n, t, 1000);
                if n == 0 {
                    assert!(r.is_empty());
                    continue;
                }
                assert_eq!(r[0].0, 0);
                assert_eq!(r.last().unwrap().1, n);
                assert!(r.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
                let expect = if t == 1 {
                    1
                } else {
                    (t * CHUNKS_PER_THREAD).min(n.div_ceil(1000))
                };
                assert_eq!(r.len(), expect.max(1), "n={n} t={t}");
            }
        }
    }

    #[test]
    fn map_ranges_is_the_serial_map_on_any_thread_count() {
        let r = ranges(100_000, 8, 10);
        let serial: Vec<usize> = r.iter().map(|&(a, b)| (a..b).sum()).collect();
        for t in [1, 2, 3, 5, 16] {
            assert_eq!(map_ranges(&r, t, |a, b| (a..b).sum::<usize>()), serial);
        }
    }

    #[test]
    fn set_threads_is_the_setting_and_zero_the_default() {
        // (the only test touching the global: tests run in parallel in one process)
        set_threads(3);
        assert_eq!(threads(), 3);
        assert_eq!(resolve(0), 3);
        assert_eq!(resolve(5), 5);
        set_threads(0);
        assert_eq!(threads(), available());
    }
}
