//! toml's errors as [`KeyError`]s. toml's error keeps a message and a span only; the key
//! path comes from the span (where it falls in the parsed document), and the "did you
//! mean" hint from the type itself ([`probe`](super::probe)), never from the message.

use super::probe::unknown_field;
use super::{shorten, KeyError, KeyPath, Place, Segment};
use serde::de::DeserializeOwned;
use toml_edit::{Item, TableLike, Value};

/// Deserialise `T` from TOML text; an error names the key at fault.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, KeyError> {
    toml::from_str(text).map_err(|e| describe::<T>(&e, text))
}

/// `e`, met while reading `text` as a `T`, on one line, at its line and column, under the
/// key it concerns: the key whose value it points at. An error pointing at a key itself
/// (an unknown field, which the message names) gets the keys `T` has there as a hint.
pub(crate) fn describe<T: DeserializeOwned>(e: &toml::de::Error, text: &str) -> KeyError {
    let mut msg = e.message().trim().replace('\n', " ");
    if msg.is_empty() {
        // toml says nothing when a value is missing, e.g. `clients =` at the end.
        msg = "expected a value".into();
    }
    let Some(span) = e.span() else {
        return KeyError::here(shorten(&msg));
    };
    let start = span.start.min(text.len());
    let place = place_of(text, start);
    let Ok(doc) = toml_edit::ImDocument::parse(text) else {
        // Not TOML at all: name the key the line assigns.
        return syntax_error(text, start, &shorten(&msg)).placed(place);
    };
    let error = match locate(doc.as_table(), start, &mut Vec::new()) {
        Some(Spot::Value(path)) => KeyError::at(path, shorten(&msg)),
        Some(Spot::Key(path)) => {
            let hint = unknown_field::<T>(path.segments()).and_then(|u| {
                crate::did_you_mean::closest(&u.field, u.expected.iter().copied())
                    .map(|key| format!(" (did you mean `{key}`?)"))
            });
            msg.push_str(hint.as_deref().unwrap_or(""));
            KeyError::here(shorten(&msg))
        }
        None => KeyError::here(shorten(&msg)),
    };
    error.placed(place)
}

/// 1-based line and column (in characters) of byte `at`.
fn place_of(text: &str, at: usize) -> Place {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    Place::At {
        line: text[..at].matches('\n').count() + 1,
        column: text[line_start..at].chars().count() + 1,
    }
}

/// A syntax error under the key its line assigns (below the table header above it), when
/// the line assigns one: the document has no tree to place it in.
fn syntax_error(text: &str, at: usize, msg: &str) -> KeyError {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let Some(key) = key else {
        return KeyError::here(msg);
    };
    let section = text[..line_start].lines().rev().find_map(|l| {
        l.trim()
            .strip_prefix('[')
            .map(|s| s.trim_matches(['[', ']']))
    });
    let e = KeyError::new(key, msg);
    match section {
        Some(sec) => e.under_key(sec),
        None => e,
    }
}

/// What an error's position falls on.
#[derive(Debug, PartialEq, Eq)]
enum Spot {
    /// A key as written (the message is about the key itself: it names it).
    Key(KeyPath),
    /// The value of the key at this path.
    Value(KeyPath),
}

/// The key or value of `table` (at `path`) whose span holds byte `at`, innermost first.
fn locate(table: &dyn TableLike, at: usize, path: &mut Vec<Segment>) -> Option<Spot> {
    for (name, item) in table.iter() {
        path.push(Segment::Key(name.to_string()));
        let on_key = table
            .key(name)
            .and_then(|k| k.span())
            .is_some_and(|s| s.contains(&at));
        let found = if on_key {
            Some(Spot::Key(KeyPath(path.clone())))
        } else {
            locate_item(item, at, path)
        };
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

fn locate_item(item: &Item, at: usize, path: &mut Vec<Segment>) -> Option<Spot> {
    match item {
        // A table's keys sit anywhere below its header: search them all.
        Item::Table(t) => locate(t, at, path),
        Item::ArrayOfTables(tables) => tables.iter().enumerate().find_map(|(i, t)| {
            path.push(Segment::Index(i));
            let found = locate(t, at, path);
            path.pop();
            found
        }),
        Item::Value(v) => locate_value(v, at, path),
        Item::None => None,
    }
}

fn locate_value(value: &Value, at: usize, path: &mut Vec<Segment>) -> Option<Spot> {
    if !value.span().is_some_and(|s| s.contains(&at)) {
        return None;
    }
    let inner = match value {
        Value::InlineTable(t) => locate(t, at, path),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, v)| {
            path.push(Segment::Index(i));
            let found = locate_value(v, at, path);
            path.pop();
            found
        }),
        _ => None,
    };
    inner.or_else(|| Some(Spot::Value(KeyPath(path.clone()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spot(text: &str, at: &str) -> Option<String> {
        let doc = toml_edit::ImDocument::parse(text).unwrap();
        let at = text.find(at).unwrap();
        locate(doc.as_table(), at, &mut Vec::new()).map(|s| match s {
            Spot::Key(p) => format!("key {p}"),
            Spot::Value(p) => format!("value {p}"),
        })
    }

    #[test]
    fn positions_are_placed_in_the_document_tree() {
        let text = "a = 1\n[t]\nb = [1, \"x\"]\nc = { d = 2 }\n[[u]]\ne = 1\n[[u]]\nf = 2\n";
        assert_eq!(spot(text, "a").as_deref(), Some("key a"));
        assert_eq!(spot(text, "1\n").as_deref(), Some("value a"));
        assert_eq!(spot(text, "\"x\"").as_deref(), Some("value t.b[1]"));
        assert_eq!(spot(text, "d =").as_deref(), Some("key t.c.d"));
        assert_eq!(spot(text, "2 }").as_deref(), Some("value t.c.d"));
        assert_eq!(spot(text, "f").as_deref(), Some("key u[1].f"));
        assert_eq!(spot(text, "[t]"), None);
    }

    #[test]
    fn dotted_and_quoted_keys_are_split_and_unquoted() {
        let text = "w.\"c\" = 3\n";
        assert_eq!(spot(text, "3").as_deref(), Some("value w.c"));
    }
}
