//! Which field a type does not have: walk a type's `Deserialize` along a key path with a
//! deserializer that holds no data, only the path, so that serde itself says whether the
//! last key is a field of the table it sits in and, when not, which fields it expected
//! (through [`serde::de::Error::unknown_field`], as values).
//!
//! toml's error keeps only a sentence; this recovers the same facts from the type.

use super::Segment;
use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use std::fmt;

/// A key the table at its path does not have, and the keys it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownField {
    /// The key as written.
    pub field: String,
    /// The keys the table has.
    pub expected: &'static [&'static str],
}

/// The unknown field that `path` (ending in a key) names in `T`, if its last key is not
/// a field of the struct it sits in. `None` when the key is a field, or when the path
/// leaves the typed part of `T` (a map, a table kept as a value, an untagged enum).
pub(crate) fn unknown_field<T: de::DeserializeOwned>(path: &[Segment]) -> Option<UnknownField> {
    let Some(Segment::Key(last)) = path.last() else {
        return None;
    };
    match T::deserialize(Probe(path)) {
        Err(ProbeError::Unknown(u)) if &u.field == last => Some(u),
        _ => None,
    }
}

/// Why the walk stopped.
#[derive(Debug)]
enum ProbeError {
    /// A struct refused a key.
    Unknown(UnknownField),
    /// Anything else: the end of the path, a missing field, a type that reads no key.
    Stop,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Unknown(u) => write!(f, "unknown field `{}`", u.field),
            ProbeError::Stop => f.write_str("stop"),
        }
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: fmt::Display>(_: T) -> Self {
        ProbeError::Stop
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        ProbeError::Unknown(UnknownField {
            field: field.to_string(),
            expected,
        })
    }
}

/// The rest of the path: a table of one key, or an array of one element, down to its end.
struct Probe<'p>(&'p [Segment]);

impl<'de> Probe<'_> {
    /// Offer the next step of the path to `visitor`.
    fn step<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        match self.0.split_first() {
            None => Err(ProbeError::Stop),
            Some((Segment::Key(key), rest)) => visitor.visit_map(OneEntry {
                key: Some(key),
                value: Some(Probe(rest)),
            }),
            // Which element does not matter: every element has the same type.
            Some((Segment::Index(_), rest)) => visitor.visit_seq(OneElement(Some(Probe(rest)))),
        }
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.step(visitor)
    }

    // A value present in the file is `Some`: toml has no null.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf unit unit_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// A table with the path's next key only.
struct OneEntry<'p> {
    key: Option<&'p str>,
    value: Option<Probe<'p>>,
}

impl<'de> de::MapAccess<'de> for OneEntry<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        match self.key.take() {
            None => Ok(None),
            Some(key) => {
                let key: StrDeserializer<'_, ProbeError> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, ProbeError> {
        seed.deserialize(self.value.take().ok_or(ProbeError::Stop)?)
    }
}

/// An array with one element on the path.
struct OneElement<'p>(Option<Probe<'p>>);

impl<'de> de::SeqAccess<'de> for OneElement<'_> {
    type Error = ProbeError;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, ProbeError> {
        self.0.take().map(|p| seed.deserialize(p)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        ttl_ms: u64,
        nodes: Option<Vec<String>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        inner: Option<Inner>,
        list: Vec<Inner>,
        free: std::collections::BTreeMap<String, u64>,
    }

    fn path(keys: &[&str]) -> Vec<Segment> {
        keys.iter()
            .map(|k| match k.parse() {
                Ok(i) => Segment::Index(i),
                Err(_) => Segment::Key(k.to_string()),
            })
            .collect()
    }

    #[test]
    fn a_key_the_struct_lacks_is_named_with_the_keys_it_has() {
        let u = unknown_field::<Outer>(&path(&["nmae"])).unwrap();
        assert_eq!(u.field, "nmae");
        assert_eq!(u.expected, ["name", "inner", "list", "free"]);
        let u = unknown_field::<Outer>(&path(&["inner", "tll_ms"])).unwrap();
        assert_eq!(u.expected, ["ttl_ms", "nodes"]);
        let u = unknown_field::<Outer>(&path(&["list", "3", "nods"])).unwrap();
        assert_eq!(u.expected, ["ttl_ms", "nodes"]);
    }

    #[test]
    fn known_keys_and_free_tables_are_not_unknown() {
        for p in [
            &["name"][..],
            &["inner", "ttl_ms"],
            &["list", "0", "nodes"],
            &["free", "anything"],
            &["inner", "nodes", "2"],
        ] {
            assert_eq!(unknown_field::<Outer>(&path(p)), None, "{p:?}");
        }
    }
}
