//! Passes: the build-time folder and hash-consing (run by the builder on every op it emits), and
//! the post-build passes (dead-code elimination, renumbering) run by
//! [`crate::KernelBuilder::finish`].
//!
//! ```text
//!   emit(op) ──► fold (constants, identities, ranges, reassociation) ──► cse (scoped table)
//!                                     │ simplified away                      │ hit
//!                                     ▼                                      ▼
//!                              existing value / const                 existing value
//!   finish() ──► dce (fixpoint over the region tree) ──► renumber (%0, %1, … in order)
//! ```

pub mod cse;
pub mod dce;
pub mod fold;
pub mod renumber;
