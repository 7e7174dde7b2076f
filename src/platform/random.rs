//! Secret randomness from the kernel, for the job endpoint's bearer tokens
//! and run ids (a hash-seeded token would be guessable).

/// `len` random bytes from the kernel's generator, as lowercase hex
/// (`2 * len` characters).
pub fn random_hex(len: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; len];
    fill_random(&mut bytes)?;
    let mut out = String::with_capacity(len * 2);
    for b in bytes {
        use std::fmt::Write;
        let _ = write!(out, "{b:02x}");
    }
    Ok(out)
}

#[cfg(target_os = "linux")]
fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: the pointer and length describe `rest`, which outlives
        // the call.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        filled += n as usize;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_hex_of_the_asked_length_and_differ() {
        let a = super::random_hex(32).expect("random");
        let b = super::random_hex(32).expect("random");
        assert_eq!(a.len(), 64);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
