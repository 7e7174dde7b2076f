//! Decodes arbitrary bytes as a peer's `/peer` body. Refusing is fine; a
//! panic is not. What decodes must survive encode -> decode unchanged, and
//! a view that observed it must render `GET /cluster` and `GET /fleet`
//! (the checks in tests/support/peer_body.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/peer_body.rs"]
mod peer_body;

fuzz_target!(|data: &[u8]| {
    peer_body::check_peer_body(data);
});
