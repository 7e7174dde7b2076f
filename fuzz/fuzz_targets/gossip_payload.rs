//! Decodes arbitrary bytes as a peer's `/peer` body. Refusing is fine; a
//! panic is not. What decodes must survive encode -> decode unchanged.
#![no_main]

use cronstable::gossip::payload::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = decode(data) else {
        return;
    };
    let body = encode(&payload);
    match decode(&body) {
        // An encoding that hit the size cap drops the summaries on purpose.
        Ok(again) if again.job_summaries_truncated && !payload.job_summaries_truncated => {}
        Ok(again) => assert_eq!(again, payload, "encode -> decode changed the payload"),
        Err(e) => panic!("our own encoding does not decode: {e}"),
    }
});
