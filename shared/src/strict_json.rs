//! JSON read strictly: a member given twice in one object is refused, naming its path, where
//! serde_json keeps the last one. `{"serviceName": "a", "serviceName": "b"}` would otherwise
//! create an agent the caller may not have meant; which of the two a reader keeps differs
//! between parsers (RFC 8259 section 4 leaves it open), so the contract refuses both.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Why a text is not strict JSON.
#[derive(Debug)]
pub enum StrictJsonError {
    /// Not JSON at all (serde_json's description).
    Syntax(serde_json::Error),
    /// A member given twice; its JSON path (`autoScaling.minAgents`, `a[2].b`).
    DuplicateMember(String),
}

/// Where a value sits in the document, built up only when an error names it.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Member(&'a Path<'a>, &'a str),
    Item(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Member(Path::Root, name) => f.write_str(name),
            Path::Member(parent, name) => write!(f, "{parent}.{name}"),
            Path::Item(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// A value at `path`; a duplicate found below it is written to `duplicate` (serde's error type
/// carries only text, so the path travels beside it).
struct Strict<'a> {
    path: Path<'a>,
    duplicate: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = items.next_element_seed(Strict {
            path: Path::Item(&self.path, values.len()),
            duplicate: self.duplicate,
        })? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(name) = members.next_key::<String>()? {
            if map.contains_key(&name) {
                let path = Path::Member(&self.path, &name).to_string();
                *self.duplicate.borrow_mut() = Some(path);
                return Err(de::Error::custom("a member is given twice"));
            }
            let value = members.next_value_seed(Strict {
                path: Path::Member(&self.path, &name),
                duplicate: self.duplicate,
            })?;
            map.insert(name, value);
        }
        Ok(Value::Object(map))
    }
}

/// Parses `bytes` as one JSON document (serde_json's grammar and nesting limit), refusing a
/// member given twice in any object.
pub fn from_slice(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict {
        path: Path::Root,
        duplicate: &duplicate,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    match (parsed, duplicate.into_inner()) {
        (_, Some(path)) => Err(StrictJsonError::DuplicateMember(path)),
        (Ok(value), None) => Ok(value),
        (Err(error), None) => Err(StrictJsonError::Syntax(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn duplicate_of(text: &str) -> Option<String> {
        match from_slice(text.as_bytes()) {
            Err(StrictJsonError::DuplicateMember(path)) => Some(path),
            _ => None,
        }
    }

    #[test]
    fn a_member_given_twice_is_named_by_its_path() {
        assert_eq!(
            duplicate_of(r#"{"serviceName":"a","serviceName":"b"}"#).as_deref(),
            Some("serviceName")
        );
        assert_eq!(
            duplicate_of(r#"{"autoScaling":{"minAgents":1,"minAgents":1}}"#).as_deref(),
            Some("autoScaling.minAgents")
        );
        assert_eq!(
            duplicate_of(r#"{"a":[{"b":1},{"c":1,"c":2}]}"#).as_deref(),
            Some("a[1].c")
        );
        assert_eq!(duplicate_of(r#"[{"x":1,"x":1}]"#).as_deref(), Some("[0].x"));
    }

    #[test]
    fn strict_json_reads_as_serde_json_does_otherwise() {
        for text in [
            r#"{"serviceName":"a","image":"b","autoScaling":{"minAgents":1,"maxAgents":2.0}}"#,
            r#"[1, -2, 18446744073709551615, 1.5e300, "é\u0000", true, null, {}]"#,
            r#"  {"same":{"a":1},"other":{"a":1}}  "#,
        ] {
            let strict = from_slice(text.as_bytes()).unwrap();
            let lenient: Value = serde_json::from_str(text).unwrap();
            assert_eq!(strict, lenient, "{text}");
        }
        for broken in ["", "{", "{\"a\":}", "nul", "{} {}", "\"\u{0}\"", "[1,]"] {
            assert!(
                matches!(
                    from_slice(broken.as_bytes()),
                    Err(StrictJsonError::Syntax(_))
                ),
                "{broken:?}"
            );
        }
        assert!(matches!(
            from_slice(&[b'"', 0xff, b'"']),
            Err(StrictJsonError::Syntax(_))
        ));
        let deep = format!("{}{}", "[".repeat(3_000), "]".repeat(3_000));
        assert!(
            matches!(from_slice(deep.as_bytes()), Err(StrictJsonError::Syntax(_))),
            "serde_json's nesting limit holds"
        );
        assert_eq!(from_slice(b"{}").unwrap(), json!({}));
    }
}
