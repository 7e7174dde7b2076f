//! The bytes behind an OS string. POSIX argv and environment values are
//! byte strings that need not be UTF-8; Python decodes them with
//! `surrogateescape`, and the job CLI must read them the same way, so it
//! needs the raw bytes rather than a lossy conversion.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};

/// The bytes of `s`: on POSIX exactly the bytes the OS gave; elsewhere its
/// UTF-8 spelling (lossy for unpaired UTF-16 surrogates).
#[cfg(unix)]
pub fn os_str_bytes(s: &OsStr) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(s.as_bytes())
}

/// See the unix version.
#[cfg(not(unix))]
pub fn os_str_bytes(s: &OsStr) -> Cow<'_, [u8]> {
    match s.to_string_lossy() {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}

/// The OS string made of `bytes` (the inverse of [`os_str_bytes`]; lossy
/// off POSIX for bytes that are not UTF-8).
#[cfg(unix)]
pub fn os_string_from_bytes(bytes: Vec<u8>) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    OsString::from_vec(bytes)
}

/// See the unix version.
#[cfg(not(unix))]
pub fn os_string_from_bytes(bytes: Vec<u8>) -> OsString {
    OsString::from(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip() {
        let s = OsStr::new("key-é");
        assert_eq!(&*os_str_bytes(s), "key-é".as_bytes());
        assert_eq!(os_string_from_bytes(b"abc".to_vec()), OsString::from("abc"));
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_bytes_survive_on_posix() {
        let raw = vec![b'a', 0xff, b'b'];
        let s = os_string_from_bytes(raw.clone());
        assert_eq!(&*os_str_bytes(&s), raw.as_slice());
    }
}
