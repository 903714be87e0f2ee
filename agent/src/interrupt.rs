//! Ctrl-C: a handle the command line's signal handler fires and the loop reads. Firing it
//! halts the generation in flight (through [`models::Generation::halt`]'s flag) and ends a
//! running command; the loop then stops with [`crate::StopReason::Quit`] (`user_quit`) and
//! reports as for any stop. The crate installs no signal handler itself: it knows no runtime.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A cheap, clonable interrupt flag shared between a signal handler and a session.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    fired: AtomicBool,
    /// The halt flag of the generation in flight, if any.
    halt: Mutex<Option<Arc<AtomicBool>>>,
}

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Fires the interrupt and halts the generation in flight. Returns whether it had fired
    /// already (a second Ctrl-C, which the caller answers by exiting at once).
    pub fn fire(&self) -> bool {
        let again = self.0.fired.swap(true, Ordering::SeqCst);
        if let Some(halt) = self.halt_slot().as_ref() {
            halt.store(true, Ordering::SeqCst);
        }
        again
    }

    pub fn fired(&self) -> bool {
        self.0.fired.load(Ordering::SeqCst)
    }

    /// Halts `halt`'s generation when the interrupt fires (at once if it already has), until
    /// [`Interrupt::unwatch`].
    pub(crate) fn watch(&self, halt: Arc<AtomicBool>) {
        let mut slot = self.halt_slot();
        if self.fired() {
            halt.store(true, Ordering::SeqCst);
        }
        *slot = Some(halt);
    }

    pub(crate) fn unwatch(&self) {
        *self.halt_slot() = None;
    }

    fn halt_slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<AtomicBool>>> {
        self.0.halt.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firing_halts_the_watched_generation_and_reports_a_second_fire() {
        let i = Interrupt::new();
        let halt = Arc::new(AtomicBool::new(false));
        i.watch(Arc::clone(&halt));
        assert!(!i.fire(), "the first Ctrl-C");
        assert!(halt.load(Ordering::SeqCst) && i.fired());
        assert!(i.fire(), "the second Ctrl-C");
        // A generation started after the interrupt is halted at once.
        i.unwatch();
        let later = Arc::new(AtomicBool::new(false));
        i.watch(Arc::clone(&later));
        assert!(later.load(Ordering::SeqCst));
    }
}
