//! Reading JSON text into a [`Value`] while noticing duplicate keys, which `serde_json` would
//! otherwise resolve silently (the later value wins).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::path::JsonPath;

/// A parsed document and the keys that appeared more than once in one object.
#[derive(Debug)]
pub(super) struct Document {
    /// The document; for a duplicated key, the later value at the first key's position.
    pub(super) value: Value,
    /// Each repeated key, with the path of that key, in document order.
    pub(super) duplicates: Vec<(JsonPath, String)>,
}

/// Parses `text` as one JSON value (`serde_json`'s grammar and nesting limit).
pub(super) fn read(text: &str) -> Result<Document, serde_json::Error> {
    let mut duplicates = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Tracked {
        path: JsonPath::root(),
        duplicates: &mut duplicates,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Document { value, duplicates })
}

/// Deserializes the value at `path`, recording duplicate keys beneath it.
struct Tracked<'a> {
    /// Where the value being read is.
    path: JsonPath,
    /// Where duplicates go.
    duplicates: &'a mut Vec<(JsonPath, String)>,
}

impl<'de> DeserializeSeed<'de> for Tracked<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tracked<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
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

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = access.next_element_seed(Tracked {
            path: self.path.index(items.len()),
            duplicates: &mut *self.duplicates,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let path = self.path.key(&key);
            let value = access.next_value_seed(Tracked {
                path: path.clone(),
                duplicates: &mut *self.duplicates,
            })?;
            if map.contains_key(&key) {
                self.duplicates.push((path, key.clone()));
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_like_serde_json() {
        let text = r#"{"b": [1, -2, 2.5, "x", null, true, {}], "a": {"c": []}}"#;
        let document = read(text).unwrap();
        assert_eq!(document.value, serde_json::from_str::<Value>(text).unwrap());
        let keys: Vec<_> = document
            .value
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["b", "a"]);
        assert!(document.duplicates.is_empty());
    }

    #[test]
    fn duplicates_are_recorded_and_the_later_wins() {
        let text = r#"{"g": {"enabled": true}, "x": [{"k": 1, "k": 2}], "g": {"enabled": false}}"#;
        let document = read(text).unwrap();
        assert_eq!(
            document.value,
            json!({"g": {"enabled": false}, "x": [{"k": 2}]})
        );
        let found: Vec<_> = document
            .duplicates
            .iter()
            .map(|(path, key)| (path.to_string(), key.as_str()))
            .collect();
        assert_eq!(
            found,
            [("$.x[0].k".to_owned(), "k"), ("$.g".to_owned(), "g")]
        );
    }

    #[test]
    fn bad_json_and_deep_nesting_are_errors() {
        assert!(read("{").is_err());
        assert!(read("{} {}").is_err());
        assert!(read(&"[".repeat(100_000)).is_err());
    }
}
