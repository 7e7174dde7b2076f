//! Python-compatible readings and spellings that sit below the config
//! model: the original's YAML reader (strictyaml) accepts scalars that
//! serde would refuse, and every layer above reads config through these.

pub mod lenient;
