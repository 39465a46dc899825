//! Reading JSON that Go programs wrote: Go encodes an empty (nil) list or map as `null`, which
//! means the same as `[]` or `{}` wherever we read a Go-written document.

use serde::{Deserialize, Deserializer};

/// For `#[serde(default, deserialize_with = "null_as_empty")]`: a missing field, `null` and an
/// empty list or map all read as empty.
pub(crate) fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Listed {
        #[serde(default, deserialize_with = "null_as_empty")]
        items: Vec<u32>,
    }

    #[test]
    fn null_missing_and_empty_are_all_empty() {
        for text in [r#"{"items":null}"#, "{}", r#"{"items":[]}"#] {
            let listed: Listed = serde_json::from_str(text).unwrap();
            assert!(listed.items.is_empty(), "{text}");
        }
        let listed: Listed = serde_json::from_str(r#"{"items":[1,2]}"#).unwrap();
        assert_eq!(listed.items, [1, 2]);
        assert!(serde_json::from_str::<Listed>(r#"{"items":7}"#).is_err());
    }
}
