//! The pure rules of the shared-directory lease: file-name tokens, the
//! lease record's format, who may take or renew it, and the root path.

/// The margin, each side, for clock skew between hosts.
pub(super) const SKEW: f64 = 1.0;

pub(crate) use crate::state::format::wall_now;
pub use crate::state::format::{absolute_root, fs_safe};

pub use crate::state::lease::{acquire_fence, may_renew, LeaseRecord};

/// What an unlocked read of the lease tells a node that does not hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sighting {
    /// It names our own token (an acquire that timed out landed after
    /// all): adopt it, and let the next locked renewal grant leadership.
    Ours,
    /// Someone else holds it, or it expired less than the skew margin ago
    /// by our clock: wait.
    Held,
    /// Absent, released, or expired beyond the margin: campaign.
    Free,
}

/// Classifies an unlocked read (`None`: absent or released) at wall
/// clock `now`.
pub fn sighting(observed: Option<&LeaseRecord>, token: &str, now: f64) -> Sighting {
    match observed {
        Some(o) if o.holder == token => Sighting::Ours,
        Some(o) if o.expires_at > now - SKEW => Sighting::Held,
        _ => Sighting::Free,
    }
}

/// `expiresAt` the way the original shows it (Python's
/// `datetime.isoformat()` in UTC: microseconds only when non-zero).
pub fn iso_expiry(expires_at: f64) -> Option<String> {
    if expires_at <= 0.0 || !expires_at.is_finite() {
        return None;
    }
    let micros = (expires_at * 1e6).round() as i64;
    let at = chrono::DateTime::<chrono::Utc>::from_timestamp_micros(micros)?;
    Some(if at.timestamp_subsec_micros() == 0 {
        at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    } else {
        at.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use std::path::PathBuf;

    #[test]
    fn fs_safe_escapes_everything_outside_lowercase_digits_dash_underscore() {
        assert_eq!(fs_safe("cluster/leader"), "cluster%2Fleader");
        assert_eq!(fs_safe("default"), "default");
        assert_eq!(fs_safe("Prod.EU_1-a"), "%50rod%2E%45%55_1-a");
        assert_eq!(fs_safe("é"), "%C3%A9");
        assert_eq!(fs_safe(""), "_");
    }

    #[test]
    fn fs_safe_escapes_the_first_character_of_windows_device_names() {
        assert_eq!(fs_safe("con"), "%63on");
        assert_eq!(fs_safe("nul"), "%6Eul");
        assert_eq!(fs_safe("com1"), "%63om1");
        assert_eq!(fs_safe("lpt9"), "%6Cpt9");
        assert_eq!(fs_safe("com0"), "com0");
        assert_eq!(fs_safe("cons"), "cons");
    }

    #[test]
    fn fs_safe_shortens_long_tokens_with_a_digest() {
        let name = "x".repeat(131);
        let token = fs_safe(&name);
        assert_eq!(token.len(), 130);
        assert!(token.starts_with(&"x".repeat(96)));
        let digest = Sha256::digest(name.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&token[96..], format!("%.{}", &hex[..32]));
        // 130 is kept whole; escapes count towards the length.
        assert_eq!(fs_safe(&"y".repeat(130)), "y".repeat(130));
        assert_eq!(fs_safe(&"/".repeat(44)).len(), 130);
        assert_ne!(fs_safe(&"x".repeat(132)), token);
    }

    #[test]
    fn records_encode_as_compact_sorted_json_and_read_back() {
        let record = LeaseRecord {
            expires_at: 1750000015.123,
            fence: 3,
            holder: "node-a#0a1b2c3d4e5f".to_owned(),
            name: "cluster/leader".to_owned(),
        };
        let bytes = record.encode();
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"{"expiresAt":1750000015.123,"fence":3,"holder":"node-a#0a1b2c3d4e5f","name":"cluster/leader"}"#
        );
        assert_eq!(LeaseRecord::decode(&bytes), Ok(record.clone()));
        let released = LeaseRecord {
            expires_at: 0.0,
            ..record
        };
        assert!(String::from_utf8_lossy(&released.encode()).contains(r#""expiresAt":0.0,"#));
    }

    #[test]
    fn records_written_by_python_read_and_corrupt_ones_do_not() {
        let python =
            br#"{"expiresAt": 1750000015, "fence": 2.0, "holder": "b#1", "name": "n", "x": 1}"#;
        let read = LeaseRecord::decode(python).expect("python's spelling reads");
        assert_eq!((read.expires_at, read.fence), (1750000015.0, 2));
        for bad in [
            &b""[..],
            b"[]",
            b"{\"fence\":1,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":1,\"fence\":-1,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":1,\"fence\":1.5,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":\"soon\",\"fence\":1,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":1,\"fence\":1,\"hol",
        ] {
            assert!(
                LeaseRecord::decode(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    fn lease(holder: &str, fence: u64, expires_at: f64) -> LeaseRecord {
        LeaseRecord {
            expires_at,
            fence,
            holder: holder.to_owned(),
            name: "cluster/leader".to_owned(),
        }
    }

    #[test]
    fn acquire_fences_count_takeovers_and_deny_live_foreign_leases() {
        let now = 1000.0;
        assert_eq!(acquire_fence(None, "a#1", now), Some(1));
        assert_eq!(
            acquire_fence(Some(&lease("b#2", 4, 1000.5)), "a#1", now),
            None
        );
        assert_eq!(
            acquire_fence(Some(&lease("b#2", 4, 1000.0)), "a#1", now),
            Some(5)
        );
        assert_eq!(
            acquire_fence(Some(&lease("b#2", 4, 0.0)), "a#1", now),
            Some(5)
        );
        assert_eq!(
            acquire_fence(Some(&lease("a#1", 4, 1010.0)), "a#1", now),
            Some(4)
        );
        assert_eq!(
            acquire_fence(Some(&lease("a#1", 4, 0.0)), "a#1", now),
            Some(5)
        );
    }

    #[test]
    fn renewals_need_the_same_holder_and_fence_and_no_release() {
        let held = lease("a#1", 4, 1010.0);
        assert!(
            may_renew(Some(&lease("a#1", 4, 990.0)), &held),
            "a hair past expiry is fine"
        );
        assert!(
            !may_renew(Some(&lease("a#1", 4, 0.0)), &held),
            "released stays released"
        );
        assert!(!may_renew(Some(&lease("a#1", 5, 1010.0)), &held));
        assert!(!may_renew(Some(&lease("b#2", 4, 1010.0)), &held));
        assert!(!may_renew(None, &held));
    }

    #[test]
    fn challengers_wait_a_second_past_the_written_expiry() {
        let now = 1000.0;
        assert_eq!(sighting(None, "a#1", now), Sighting::Free);
        assert_eq!(
            sighting(Some(&lease("b#2", 1, 1005.0)), "a#1", now),
            Sighting::Held
        );
        assert_eq!(
            sighting(Some(&lease("b#2", 1, 999.5)), "a#1", now),
            Sighting::Held
        );
        assert_eq!(
            sighting(Some(&lease("b#2", 1, 999.0)), "a#1", now),
            Sighting::Free
        );
        assert_eq!(
            sighting(Some(&lease("a#1", 1, 10.0)), "a#1", now),
            Sighting::Ours
        );
    }

    #[test]
    fn expiry_is_shown_the_way_python_prints_it() {
        assert_eq!(
            iso_expiry(1782241215.123456).as_deref(),
            Some("2026-06-23T19:00:15.123456+00:00")
        );
        assert_eq!(
            iso_expiry(1782241215.0).as_deref(),
            Some("2026-06-23T19:00:15+00:00")
        );
        assert_eq!(iso_expiry(0.0), None);
    }

    #[test]
    fn roots_are_absolute_and_normalised_by_name() {
        assert_eq!(absolute_root("/srv/./a/../b/"), PathBuf::from("/srv/b"));
        let relative = absolute_root("shared");
        assert!(relative.is_absolute() && relative.ends_with("shared"));
    }
}
