//! The `bellows` workspace root package: it owns the end-to-end `tests/` and the `benches/`,
//! and re-exports the member crates so both can name them in one place.

pub use codec;
pub use gateway;
pub use models;
