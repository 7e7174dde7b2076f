//! Value shapes shared by several config sections: commands, schedules,
//! secret sources, environment entries and the "bool or map" toggles.

use crate::compat::lenient;
use crate::config::merge::{merge_as_leaf, merge_fields, Merge};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A job or reporter command: a shell string or an argv list.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Command {
    /// Run through the job's shell (`shell -c COMMAND`).
    Shell(String),
    /// Executed directly, no shell involved.
    Argv(Vec<String>),
}

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Command;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a command string or a list of argument strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Command, E> {
                Ok(Command::Shell(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Command, E> {
                Ok(Command::Shell(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Command, E> {
                Ok(Command::Shell(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Command, E> {
                Ok(Command::Shell(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Command, E> {
                Ok(Command::Shell(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Command, A::Error> {
                #[derive(Deserialize)]
                struct Arg(#[serde(deserialize_with = "lenient::string")] String);
                let args: Vec<Arg> =
                    Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Command::Argv(args.into_iter().map(|Arg(a)| a).collect()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Two argv lists concatenate (lower layer first), as every list other than
/// `environment`, `secrets` and `fingerprint` does; anything else replaces.
impl Merge for Command {
    fn merge_from(&mut self, lower: &Self) {
        if let (Command::Argv(upper), Command::Argv(lower)) = (&mut *self, lower) {
            let mut merged = lower.clone();
            merged.append(upper);
            *upper = merged;
        }
    }
}

/// The object form of a schedule; each field is one cron field's text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleFields {
    /// Seconds field; when set the schedule runs at second granularity.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub second: Option<String>,
    /// Minutes field (default `*`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub minute: Option<String>,
    /// Hours field (default `*`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub hour: Option<String>,
    /// Day-of-month field (default `*`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub day_of_month: Option<String>,
    /// Month field (default `*`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub month: Option<String>,
    /// Year field; when set the expression gains a trailing year.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub year: Option<String>,
    /// Day-of-week field (default `*`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub day_of_week: Option<String>,
}

impl ScheduleFields {
    /// Assembles the crontab text: 5 fields, plus a trailing year when set,
    /// plus a leading second when set (then the year defaults to `*`).
    pub fn to_expression(&self) -> String {
        let f = |v: &Option<String>| v.clone().unwrap_or_else(|| "*".to_owned());
        let mut parts = Vec::with_capacity(7);
        if let Some(second) = &self.second {
            parts.push(second.clone());
        }
        parts.extend([
            f(&self.minute),
            f(&self.hour),
            f(&self.day_of_month),
            f(&self.month),
            f(&self.day_of_week),
        ]);
        if self.second.is_some() || self.year.is_some() {
            parts.push(f(&self.year));
        }
        parts.join(" ")
    }
}

/// A schedule as written: crontab text (or `@macro`) or the object form.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Schedule {
    /// A crontab expression, an `@macro`, or `@reboot`.
    Text(String),
    /// The object form, one key per cron field.
    Fields(ScheduleFields),
}

impl Schedule {
    /// The crontab text this schedule stands for.
    pub fn expression(&self) -> String {
        match self {
            Schedule::Text(t) => t.clone(),
            Schedule::Fields(f) => f.to_expression(),
        }
    }
}

impl<'de> Deserialize<'de> for Schedule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Schedule;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a crontab string or a map of cron fields")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Schedule, E> {
                Ok(Schedule::Text(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Schedule, E> {
                Ok(Schedule::Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Schedule, E> {
                Ok(Schedule::Text(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Schedule, A::Error> {
                ScheduleFields::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(Schedule::Fields)
            }
        }
        d.deserialize_any(V)
    }
}

merge_as_leaf!(Schedule);

/// Where a secret comes from: inline, a file, or an environment variable.
/// Resolved when it is used, so rotating a file needs no reload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretSource {
    /// The secret itself.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub value: Option<String>,
    /// A file holding the secret (trailing whitespace is trimmed).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub from_file: Option<String>,
    /// An environment variable of the daemon holding the secret.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub from_env_var: Option<String>,
}
merge_fields!(SecretSource {
    value,
    from_file,
    from_env_var
});

impl SecretSource {
    /// True when any of the three sources is set.
    pub fn is_configured(&self) -> bool {
        self.value.is_some() || self.from_file.is_some() || self.from_env_var.is_some()
    }
}

/// One `environment:` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// Variable name.
    #[serde(deserialize_with = "lenient::string")]
    pub key: String,
    /// Variable value.
    #[serde(deserialize_with = "lenient::string")]
    pub value: String,
}

/// The `environment:` list; layers merge by variable name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Environment(pub Vec<EnvVar>);

impl Merge for Environment {
    /// Lower entries keep their position; an upper entry with the same key
    /// replaces the value in place, new keys are appended. A key written
    /// twice in one list collapses to its last value.
    fn merge_from(&mut self, lower: &Self) {
        let mut merged: Vec<EnvVar> = Vec::with_capacity(lower.0.len() + self.0.len());
        for var in lower.0.iter().chain(self.0.iter()) {
            match merged.iter_mut().find(|m| m.key == var.key) {
                Some(slot) => slot.value = var.value.clone(),
                None => merged.push(var.clone()),
            }
        }
        self.0 = merged;
    }
}

/// A value that distinguishes "not written" from an explicit `null`, for
/// keys where `null` in a job undoes what `defaults:` set.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Nullable<T> {
    /// The key is absent: the lower layer shows through.
    #[default]
    Unset,
    /// The key is present and empty: clears the lower layer's value.
    Null,
    /// The key is present with a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// The value, if one was written.
    pub fn value(&self) -> Option<&T> {
        match self {
            Nullable::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T: Clone> Merge for Nullable<T> {
    fn merge_from(&mut self, lower: &Self) {
        if matches!(self, Nullable::Unset) {
            *self = lower.clone();
        }
    }
}

impl<'de> Deserialize<'de> for Nullable<String> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match lenient::opt_string(d)? {
            Some(v) => Nullable::Value(v),
            None => Nullable::Null,
        })
    }
}

impl<T: JsonSchema> JsonSchema for Nullable<T> {
    // Same schema as Option<T>, written inline: a reference would name a
    // type that means nothing to someone writing YAML.
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Option<T>>::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T>>::json_schema(generator)
    }
    fn inline_schema() -> bool {
        true
    }
}

/// Accepts `key: true|false` or `key: {enabled: ..., ...}` for toggles whose
/// map form tunes the feature. The bool form reads as a map with only
/// `enabled` set.
pub fn bool_or_map<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + From<bool>,
{
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de> + From<bool>> Visitor<'de> for V<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a boolean or a map")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(T::from(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            lenient::parse_bool_word(v)
                .map(|b| Some(T::from(b)))
                .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// A key that must be written but may be `null`: serde treats a missing
/// `Option` field as `None` unless a `deserialize_with` function reads it.
pub fn required_nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}
