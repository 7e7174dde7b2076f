//! Layering of partial job specs: a job over its file's `defaults:` over the
//! built-in defaults.
//!
//! Every field of a spec is optional, so a layer either sets a field or lets
//! the layer below show through. Nested blocks (`failsWhen`, `onFailure`,
//! report blocks, maps, ...) merge key by key; scalars replace; lists
//! concatenate (lower layer first), except `environment` and `secrets`, which
//! merge by name, and sentry's `fingerprint`, which replaces.

/// Fills in what `self` leaves unset from a lower-precedence layer.
pub trait Merge {
    /// Keeps every value `self` sets and takes the rest from `lower`.
    fn merge_from(&mut self, lower: &Self);
}

impl<T: Merge + Clone> Merge for Option<T> {
    fn merge_from(&mut self, lower: &Self) {
        match (self.as_mut(), lower) {
            (None, Some(l)) => *self = Some(l.clone()),
            (Some(s), Some(l)) => s.merge_from(l),
            _ => {}
        }
    }
}

impl<T: Merge> Merge for Box<T> {
    fn merge_from(&mut self, lower: &Self) {
        self.as_mut().merge_from(lower.as_ref());
    }
}

/// Implements [`Merge`] as "the upper layer wins whole" for leaf types.
macro_rules! merge_as_leaf {
    ($($t:ty),* $(,)?) => {
        $(impl $crate::config::merge::Merge for $t {
            fn merge_from(&mut self, _lower: &Self) {}
        })*
    };
}
pub(crate) use merge_as_leaf;

merge_as_leaf!(String, bool, i64, f64);

impl Merge for Vec<String> {
    fn merge_from(&mut self, lower: &Self) {
        let mut merged = lower.clone();
        merged.append(self);
        *self = merged;
    }
}

impl<V: Clone> Merge for std::collections::BTreeMap<String, V> {
    fn merge_from(&mut self, lower: &Self) {
        for (key, value) in lower {
            self.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// Implements [`Merge`] for a struct of optional fields, field by field.
macro_rules! merge_fields {
    ($t:ty { $($field:ident),* $(,)? }) => {
        impl $crate::config::merge::Merge for $t {
            fn merge_from(&mut self, lower: &Self) {
                $( $crate::config::merge::Merge::merge_from(&mut self.$field, &lower.$field); )*
            }
        }
    };
}
pub(crate) use merge_fields;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default, Debug, PartialEq)]
    struct Inner {
        a: Option<i64>,
        b: Option<String>,
    }
    merge_fields!(Inner { a, b });

    #[derive(Clone, Default, Debug, PartialEq)]
    struct Outer {
        x: Option<bool>,
        inner: Option<Inner>,
        list: Option<Vec<String>>,
    }
    merge_fields!(Outer { x, inner, list });

    #[test]
    fn upper_layer_wins_and_nested_blocks_merge_key_by_key() {
        let mut job = Outer {
            x: None,
            inner: Some(Inner {
                a: Some(1),
                b: None,
            }),
            list: Some(vec!["job".into()]),
        };
        let defaults = Outer {
            x: Some(true),
            inner: Some(Inner {
                a: Some(9),
                b: Some("d".into()),
            }),
            list: Some(vec!["d1".into(), "d2".into()]),
        };
        job.merge_from(&defaults);
        assert_eq!(
            job,
            Outer {
                x: Some(true),
                inner: Some(Inner {
                    a: Some(1),
                    b: Some("d".into())
                }),
                list: Some(vec!["d1".into(), "d2".into(), "job".into()]),
            }
        );
    }

    #[test]
    fn unset_block_is_copied_from_lower_layer() {
        let mut job = Outer::default();
        let defaults = Outer {
            inner: Some(Inner {
                a: Some(2),
                b: None,
            }),
            ..Outer::default()
        };
        job.merge_from(&defaults);
        assert_eq!(job.inner, defaults.inner);
    }
}
