//! The top-level `pools:` section: named capacity shared by the jobs that
//! name it with `pool:`. Kept in the order written (the original's dict
//! order), which is the order `GET /pools` lists them in.

use crate::compat::lenient;
use schemars::JsonSchema;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// One pool as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolSpec {
    /// Total capacity, 1 to 10000 (required).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub slots: Option<i64>,
    /// Waiting-work limit, 1 to 10000 (default 1000).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_queued: Option<i64>,
}

/// The `pools:` map, in the order written.
#[derive(Debug, Clone, Default, PartialEq, JsonSchema)]
#[schemars(with = "BTreeMap<String, PoolSpec>")]
pub struct PoolsSection(pub Vec<(String, PoolSpec)>);

impl<'de> Deserialize<'de> for PoolsSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = PoolsSection;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of pool names to {slots, maxQueued}")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<PoolsSection, E> {
                // `pools:` with nothing under it: no pools.
                Ok(PoolsSection::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PoolsSection, A::Error> {
                let mut pools = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let spec: PoolSpec = map.next_value()?;
                    pools.push((name, spec));
                }
                Ok(PoolsSection(pools))
            }
        }
        d.deserialize_any(Ordered)
    }
}

impl Serialize for PoolsSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, spec) in &self.0 {
            map.serialize_entry(name, spec)?;
        }
        map.end()
    }
}

/// The `maxQueued` of a pool that does not set it.
pub const DEFAULT_MAX_QUEUED: u32 = 1000;

/// The largest `slots` and `maxQueued` a pool may have.
pub const POOL_LIMIT: i64 = 10_000;

/// One pool, checked: capacity and waiting-work limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConf {
    /// Total capacity.
    pub slots: u32,
    /// Waiting-work limit.
    pub max_queued: u32,
}

impl PoolSpec {
    /// Checks one pool with the original's texts (name printable, ranges).
    pub fn resolve(&self, name: &str) -> Result<PoolConf, String> {
        if name.is_empty() || name.chars().any(|c| (c as u32) < 32 || c as u32 == 127) {
            return Err("pool names must be non-empty and printable".into());
        }
        let Some(slots) = self.slots else {
            return Err(format!(
                "required key 'slots' not found in pool {}",
                crate::pyfmt::repr_str(name)
            ));
        };
        if !(1..=POOL_LIMIT).contains(&slots) {
            return Err("pool slots must be between 1 and 10000".into());
        }
        let max_queued = self.max_queued.unwrap_or(i64::from(DEFAULT_MAX_QUEUED));
        if !(1..=POOL_LIMIT).contains(&max_queued) {
            return Err("pool maxQueued must be between 1 and 10000".into());
        }
        // Both within 1..=10000, so they fit.
        Ok(PoolConf {
            slots: slots as u32,
            max_queued: max_queued as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_keep_their_written_order_and_check_with_the_original_texts() {
        let section: PoolsSection =
            serde_yaml::from_str("zeta:\n  slots: 2\nalpha:\n  slots: '3'\n  maxQueued: 7\n")
                .expect("parses");
        let names: Vec<&str> = section.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"]);
        assert_eq!(
            section.0[1].1.resolve("alpha"),
            Ok(PoolConf {
                slots: 3,
                max_queued: 7
            })
        );
        assert_eq!(
            section.0[0].1.resolve("zeta").map(|c| c.max_queued),
            Ok(1000)
        );
        for (spec, name, text) in [
            (
                PoolSpec::default(),
                "p",
                "required key 'slots' not found in pool 'p'",
            ),
            (
                PoolSpec {
                    slots: Some(0),
                    max_queued: None,
                },
                "p",
                "pool slots must be between 1 and 10000",
            ),
            (
                PoolSpec {
                    slots: Some(10_001),
                    max_queued: None,
                },
                "p",
                "pool slots must be between 1 and 10000",
            ),
            (
                PoolSpec {
                    slots: Some(1),
                    max_queued: Some(0),
                },
                "p",
                "pool maxQueued must be between 1 and 10000",
            ),
            (
                PoolSpec {
                    slots: Some(1),
                    max_queued: None,
                },
                "a\tb",
                "pool names must be non-empty and printable",
            ),
            (
                PoolSpec {
                    slots: Some(1),
                    max_queued: None,
                },
                "",
                "pool names must be non-empty and printable",
            ),
        ] {
            assert_eq!(
                spec.resolve(name),
                Err(text.to_owned()),
                "{spec:?} {name:?}"
            );
        }
        assert!(serde_yaml::from_str::<PoolsSection>("p:\n  slots: 1\n  size: 2\n").is_err());
        assert_eq!(
            serde_yaml::from_str::<PoolsSection>("~").expect("null"),
            PoolsSection::default()
        );
    }
}
