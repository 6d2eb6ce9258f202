//! State shared between threads, in one shape each: a lock is taken with [`lock`], and an
//! expensive answer kept for the whole process (a compiled pattern, a compiled CEL rule, the
//! comparison of two patterns) lives in a [`Memo`].
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, also after a thread panicked while holding it.
///
/// A panic is a bug, reported by the thread or task it happened in; the other threads go on
/// with what the lock guards rather than panic in turn, because every critical section in this
/// crate changes it in one step (an insert, a push, an assignment, a `take`) and so leaves it
/// whole. Keep it that way: a section that needs several steps to be consistent is not one to
/// put behind this.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A process-wide cache of answers that cost much to compute: kept until it holds `capacity`
/// entries, then emptied and filled again, so that inputs made up by the thousand (property
/// tests, fuzzing) cannot grow it for ever. Meant for a `static`:
///
/// ```text
/// static RULES: Memo<String, Arc<Compiled>> = Memo::new(4096);
/// let rule = RULES.get_or_compute(text, || Arc::new(compile(text)));
/// ```
pub struct Memo<K, V> {
    capacity: usize,
    answers: Mutex<Option<HashMap<K, V>>>,
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    pub const fn new(capacity: usize) -> Memo<K, V> {
        Memo {
            capacity,
            answers: Mutex::new(None),
        }
    }

    /// The answer kept for `key`, or else `compute`d, kept and returned. `compute` runs without
    /// the lock, so that other threads go on meanwhile (two may compute the same answer).
    pub fn get_or_compute<Q>(&self, key: &Q, compute: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(found) = lock(&self.answers).as_ref().and_then(|a| a.get(key)) {
            return found.clone();
        }
        let answer = compute();
        let mut answers = lock(&self.answers);
        let answers = answers.get_or_insert_with(HashMap::new);
        if answers.len() >= self.capacity {
            answers.clear();
        }
        answers.insert(key.to_owned(), answer.clone());
        answer
    }

    /// The answer kept for `key`, if any: for tests of what their callers keep.
    #[cfg(test)]
    pub fn kept<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        lock(&self.answers).as_ref()?.get(key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_computed_once_and_the_memo_starts_again_when_full() {
        static SQUARES: Memo<u32, u32> = Memo::new(2);
        let computed = std::cell::Cell::new(0);
        let square = |n: u32| {
            SQUARES.get_or_compute(&n, || {
                computed.set(computed.get() + 1);
                n * n
            })
        };
        assert_eq!((square(3), square(3)), (9, 9));
        assert_eq!(computed.get(), 1);
        square(4);
        // Full: 5 empties it, so 3 is computed again.
        square(5);
        assert_eq!((square(3), computed.get()), (9, 4));
    }

    #[test]
    fn keys_are_looked_up_by_their_borrowed_form() {
        let memo: Memo<String, usize> = Memo::new(8);
        assert_eq!(memo.get_or_compute("abc", || 3), 3);
        assert_eq!(memo.get_or_compute("abc", || unreachable!()), 3);
    }

    #[test]
    fn a_lock_poisoned_by_a_panic_is_still_taken() {
        let shared = std::sync::Arc::new(Mutex::new(vec![1]));
        let other = shared.clone();
        let panicked = std::thread::spawn(move || {
            let _held = other.lock().unwrap();
            panic!("a bug while holding it");
        })
        .join();
        assert!(panicked.is_err() && shared.is_poisoned());
        lock(&shared).push(2);
        assert_eq!(*lock(&shared), [1, 2]);
    }
}
