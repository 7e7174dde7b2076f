//! Sections met more than once while a config is assembled: adopted
//! from an include or a directory's file, or refused with the clash's
//! wording.

use crate::config::error::{ConfigError, Location};
use crate::config::sections::{Located, Sections};

/// How a section clash is worded: within one include tree, or across the
/// files of a directory.
#[derive(Clone, Copy)]
pub(super) enum Clash {
    Include,
    Directory,
}

impl Sections {
    /// The first top-level section key this holds, if any.
    pub(super) fn first_key(&self) -> Option<&'static str> {
        [
            (self.web.is_some(), "web"),
            (self.logging.is_some(), "logging"),
            (self.state.is_some(), "state"),
            (self.cluster.is_some(), "cluster"),
            (self.mcp.is_some(), "mcp"),
            (self.notify.is_some(), "notify"),
            (self.push.is_some(), "push"),
            (!self.dags.is_empty(), "dags"),
            (!self.pools.is_empty(), "pools"),
        ]
        .into_iter()
        .find_map(|(set, key)| set.then_some(key))
    }

    pub(super) fn adopt(&mut self, other: Sections, clash: Clash) -> Result<(), ConfigError> {
        fn take<T>(
            mine: &mut Option<Located<T>>,
            theirs: Option<Located<T>>,
            key: &str,
            clash: Clash,
        ) -> Result<(), ConfigError> {
            match (mine.as_ref(), theirs) {
                (Some(first), Some(second)) => {
                    let message = match clash {
                        // `second` always comes from an included file;
                        // `first` may be the including file or an earlier
                        // include, so neither is called "the included one".
                        Clash::Include => format!(
                            "'{key}' is configured in more than one file of one include tree \
                             (first in {}, again here); a config has at most one '{key}' \
                             section",
                            first.source
                        ),
                        Clash::Directory => format!(
                            "'{key}' is configured in more than one file (first in {}, again \
                             here); a config has at most one '{key}' section",
                            first.source
                        ),
                    };
                    Err(ConfigError::config(
                        Location::source(second.source),
                        message,
                    ))
                }
                (None, Some(theirs)) => {
                    *mine = Some(theirs);
                    Ok(())
                }
                _ => Ok(()),
            }
        }
        take(&mut self.web, other.web, "web", clash)?;
        take(&mut self.logging, other.logging, "logging", clash)?;
        take(&mut self.state, other.state, "state", clash)?;
        take(&mut self.cluster, other.cluster, "cluster", clash)?;
        take(&mut self.mcp, other.mcp, "mcp", clash)?;
        take(&mut self.notify, other.notify, "notify", clash)?;
        take(&mut self.push, other.push, "push", clash)?;
        self.dags.extend(other.dags);
        for pool in other.pools {
            self.adopt_pool(pool)?;
        }
        Ok(())
    }

    /// Adds one pool; a name already defined in any file of the config
    /// is refused with the original's text.
    pub(crate) fn adopt_pool(
        &mut self,
        pool: Located<(String, crate::config::sections::PoolConf)>,
    ) -> Result<(), ConfigError> {
        if self.pools.iter().any(|p| p.value.0 == pool.value.0) {
            return Err(ConfigError::config(
                Location::source(pool.source),
                format!("duplicate pool {}", crate::pyfmt::repr_str(&pool.value.0)),
            ));
        }
        self.pools.push(pool);
        Ok(())
    }
}
