//! Deserialising a parsed `toml::Table` with an error type of our own, so that serde
//! hands over *which* field is unknown or missing (and which it expected) as values,
//! through [`serde::de::Error::unknown_field`] and [`serde::de::Error::missing_field`],
//! instead of a sentence to take apart. toml's own error type keeps only the sentence.
//!
//! The deserializer feeds serde what toml's does for the same value (an integer through
//! `visit_i64`, a string through `visit_string`, ...), so serde's own messages for
//! everything else (invalid type, invalid value, unknown variant) read the same.

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use std::fmt;

/// Why a table does not deserialise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TableError {
    /// A key the type does not have.
    UnknownField {
        /// The key as written.
        field: String,
        /// The keys the type has.
        expected: &'static [&'static str],
    },
    /// A key the type requires.
    MissingField(&'static str),
    /// Anything else, in serde's words (e.g. "invalid type: string \"x\", expected u64").
    Other(String),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::UnknownField { field, .. } => write!(f, "unknown field `{field}`"),
            TableError::MissingField(field) => write!(f, "missing field `{field}`"),
            TableError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TableError {}

impl de::Error for TableError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        TableError::Other(msg.to_string())
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        TableError::UnknownField {
            field: field.to_string(),
            expected,
        }
    }

    fn missing_field(field: &'static str) -> Self {
        TableError::MissingField(field)
    }
}

/// Deserialise `T` from a parsed table.
pub(crate) fn from_table<T: de::DeserializeOwned>(table: toml::Table) -> Result<T, TableError> {
    T::deserialize(ValueDe(toml::Value::Table(table)))
}

/// A `toml::Value` as a deserializer whose error is [`TableError`].
struct ValueDe(toml::Value);

impl<'de> IntoDeserializer<'de, TableError> for ValueDe {
    type Deserializer = ValueDe;
    fn into_deserializer(self) -> ValueDe {
        self
    }
}

impl<'de> de::Deserializer<'de> for ValueDe {
    type Error = TableError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TableError> {
        match self.0 {
            toml::Value::String(s) => visitor.visit_string(s),
            toml::Value::Integer(i) => visitor.visit_i64(i),
            toml::Value::Float(x) => visitor.visit_f64(x),
            toml::Value::Boolean(b) => visitor.visit_bool(b),
            toml::Value::Datetime(d) => visitor.visit_string(d.to_string()),
            // Elements left unread are an error, in toml's words.
            toml::Value::Array(a) => {
                let len = a.len();
                let mut seq = SeqDeserializer::new(a.into_iter().map(ValueDe));
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()
                    .map_err(|_| de::Error::invalid_length(len, &"fewer elements in array"))?;
                Ok(v)
            }
            toml::Value::Table(t) => {
                let len = t.len();
                let mut map = MapDeserializer::new(t.into_iter().map(|(k, v)| (k, ValueDe(v))));
                let v = visitor.visit_map(&mut map)?;
                map.end()
                    .map_err(|_| de::Error::invalid_length(len, &"fewer elements in map"))?;
                Ok(v)
            }
        }
    }

    // A present value is `Some`: toml has no null.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TableError> {
        visitor.visit_some(self)
    }

    // A (unit) variant is spelt as its name; anything else is refused in toml's words.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TableError> {
        match self.0 {
            toml::Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            toml::Value::Table(t) if t.is_empty() => Err(de::Error::custom(
                "wanted exactly 1 element, found 0 elements",
            )),
            toml::Value::Table(t) if t.len() > 1 => Err(de::Error::custom(
                "wanted exactly 1 element, more than 1 element",
            )),
            _ => Err(de::Error::invalid_type(
                de::Unexpected::UnitVariant,
                &"string only",
            )),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TableError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read by serde
    struct T {
        n: u64,
        o: Option<Vec<String>>,
    }

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn fields_come_back_as_values() {
        let e = from_table::<T>(table("n = 1\nm = 2")).unwrap_err();
        assert_eq!(
            e,
            TableError::UnknownField {
                field: "m".into(),
                expected: &["n", "o"]
            }
        );
        let e = from_table::<T>(table("o = []")).unwrap_err();
        assert_eq!(e, TableError::MissingField("n"));
        let e = from_table::<T>(table("n = \"x\"")).unwrap_err();
        assert_eq!(
            e,
            TableError::Other("invalid type: string \"x\", expected u64".into())
        );
        let e = from_table::<T>(table("n = -1")).unwrap_err();
        assert_eq!(
            e,
            TableError::Other("invalid value: integer `-1`, expected u64".into())
        );
        assert!(from_table::<T>(table("n = 1\no = [\"a\"]")).is_ok());
    }
}
