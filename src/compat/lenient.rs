//! Scalar deserializers that accept what the original's schema accepts.
//!
//! The original validates YAML with strictyaml, which reads every scalar as
//! text and then converts it: `value: 3` is a valid string, `enabled: yes`
//! is a valid boolean, `killTimeout: "30"` is a valid number. serde_yaml
//! follows YAML 1.2 typing instead, so a drop-in loader needs these small
//! converters on every scalar field.

use serde::de::{self, Deserializer, Unexpected, Visitor};
use std::fmt;

/// Words strictyaml reads as `true` (compared case-insensitively).
const TRUE_WORDS: [&str; 5] = ["yes", "true", "on", "1", "y"];
/// Words strictyaml reads as `false` (compared case-insensitively).
const FALSE_WORDS: [&str; 5] = ["no", "false", "off", "0", "n"];

/// Reads a boolean written the way strictyaml accepts it.
pub fn parse_bool_word(text: &str) -> Option<bool> {
    let lower = text.trim().to_ascii_lowercase();
    if TRUE_WORDS.contains(&lower.as_str()) {
        Some(true)
    } else if FALSE_WORDS.contains(&lower.as_str()) {
        Some(false)
    } else {
        None
    }
}

struct StringVisitor;

impl<'de> Visitor<'de> for StringVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(format_float(v))
    }
}

/// Formats a float the way its YAML source most likely spelled it.
fn format_float(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

struct BoolVisitor;

impl<'de> Visitor<'de> for BoolVisitor {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a boolean (true/false, yes/no, on/off)")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        parse_bool_word(v).ok_or_else(|| E::invalid_value(Unexpected::Str(v), &self))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        match v {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(E::invalid_value(Unexpected::Signed(v), &self)),
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        match v {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(E::invalid_value(Unexpected::Unsigned(v), &self)),
        }
    }
}

struct IntVisitor;

impl<'de> Visitor<'de> for IntVisitor {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        v.trim()
            .replace('_', "")
            .parse()
            .map_err(|_| E::invalid_value(Unexpected::Str(v), &self))
    }
}

struct FloatVisitor;

impl<'de> Visitor<'de> for FloatVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        let text = v.trim().replace('_', "");
        let text = text
            .strip_prefix('.')
            .filter(|t| t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("nan"))
            .map(str::to_owned)
            .unwrap_or(text);
        text.parse()
            .map_err(|_| E::invalid_value(Unexpected::Str(v), &self))
    }
}

/// Wraps a scalar visitor so that an explicit YAML null reads as `None`.
struct OptionOf<V>(V);

impl<'de, V: Visitor<'de> + Copy> Visitor<'de> for OptionOf<V> {
    type Value = Option<V::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self.0).map(Some)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.0.visit_bool(v).map(Some)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.0.visit_i64(v).map(Some)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.0.visit_u64(v).map(Some)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.0.visit_f64(v).map(Some)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.0.visit_str(v).map(Some)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.0.visit_str(&v).map(Some)
    }
}

macro_rules! copy_visitor {
    ($($v:ident),*) => { $(impl Clone for $v { fn clone(&self) -> Self { *self } } impl Copy for $v {})* };
}
copy_visitor!(StringVisitor, BoolVisitor, IntVisitor, FloatVisitor);

/// A string field; numbers and booleans are read as their text.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(StringVisitor)
}

/// An optional string field; an explicit null reads as unset.
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(OptionOf(StringVisitor))
}

/// An optional boolean field, accepting strictyaml's yes/no words.
pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(OptionOf(BoolVisitor))
}

/// An optional integer field; quoted digits are accepted.
pub fn opt_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    d.deserialize_any(OptionOf(IntVisitor))
}

/// A required integer field; quoted digits are accepted.
pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(IntVisitor)
}

/// An optional number field; integers and quoted numbers are accepted.
pub fn opt_float<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(OptionOf(FloatVisitor))
}

/// A required number field; integers and quoted numbers are accepted.
pub fn float<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(FloatVisitor)
}

/// A list of strings whose items may be written as any scalar.
pub fn opt_string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Item(#[serde(deserialize_with = "string")] String);
    let items: Option<Vec<Item>> = serde::Deserialize::deserialize(d)?;
    Ok(items.map(|v| v.into_iter().map(|Item(s)| s).collect()))
}

/// A string-to-string map whose values may be written as any scalar.
pub fn opt_string_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<std::collections::BTreeMap<String, String>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Item(#[serde(deserialize_with = "string")] String);
    let items: Option<std::collections::BTreeMap<String, Item>> =
        serde::Deserialize::deserialize(d)?;
    Ok(items.map(|m| m.into_iter().map(|(k, Item(v))| (k, v)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    struct Probe {
        #[serde(default, deserialize_with = "opt_bool")]
        b: Option<bool>,
        #[serde(default, deserialize_with = "opt_string")]
        s: Option<String>,
        #[serde(default, deserialize_with = "opt_int")]
        i: Option<i64>,
        #[serde(default, deserialize_with = "opt_float")]
        f: Option<f64>,
    }

    fn probe(yaml: &str) -> Result<Probe, serde_yaml::Error> {
        serde_yaml::from_str(yaml)
    }

    #[test]
    fn booleans_accept_strictyaml_words() {
        for (text, want) in [
            ("yes", true),
            ("No", false),
            ("ON", true),
            ("off", false),
            ("true", true),
            ("'1'", true),
            ("0", false),
            ("y", true),
            ("n", false),
        ] {
            let p = probe(&format!("b: {text}")).unwrap();
            assert_eq!(p.b, Some(want), "{text}");
        }
        let err = probe("b: maybe").unwrap_err().to_string();
        assert!(err.contains("maybe"), "{err}");
    }

    #[test]
    fn strings_accept_any_scalar() {
        assert_eq!(probe("s: 3").unwrap().s.as_deref(), Some("3"));
        assert_eq!(probe("s: true").unwrap().s.as_deref(), Some("true"));
        assert_eq!(probe("s: 2.5").unwrap().s.as_deref(), Some("2.5"));
        assert_eq!(probe("s: ~").unwrap().s, None);
        assert!(probe("s: [1]").is_err());
    }

    #[test]
    fn numbers_accept_quoted_digits_and_reject_words() {
        assert_eq!(probe("i: '42'").unwrap().i, Some(42));
        assert_eq!(probe("f: 30").unwrap().f, Some(30.0));
        assert_eq!(probe("f: '0.5'").unwrap().f, Some(0.5));
        assert!(probe("i: 1.5").is_err());
        assert!(probe("f: soon").is_err());
    }
}
