//! Engine-level tests.
