//! Locking shared by every module of the engine (a leaf: it imports
//! nothing of the engine's).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data even if a thread panicked while holding it:
/// every critical section leaves its data consistent at each step, so one
/// failed partition must not stop the engine.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
