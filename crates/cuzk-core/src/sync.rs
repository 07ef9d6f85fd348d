//! The crate's one poisoned-mutex policy.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data even if a thread panicked while holding it:
/// every critical section here leaves its data consistent at each step, so
/// a panic elsewhere must not take the whole process down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
