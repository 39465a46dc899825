//! What an engine's `image inspect` says about an image, in the one shape the docker CLI, the
//! podman CLI and the Engine API all share (`Id`, `RepoTags`, `RootFS.Layers`, `Os`, `Architecture`).

use serde::Deserialize;

use crate::image::digest::Digest;

/// An image as its engine describes it, before anything is exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFacts {
    /// The engine's image ID: the config digest for docker's classic store and podman, the
    /// manifest digest for containerd stores. Either way it changes exactly when the content does.
    pub id: String,
    pub repo_tags: Vec<String>,
    /// The layers' uncompressed digests, base first.
    pub diff_ids: Vec<Digest>,
    /// `os/arch[/variant]`, when the engine says.
    pub platform: Option<String>,
    /// How many bytes the image holds (`Size`), when the engine says: what bounds its export.
    pub size: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectJson {
    id: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "RootFS", default)]
    root_fs: Option<RootFs>,
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
    #[serde(default)]
    size: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RootFs {
    #[serde(default)]
    layers: Option<Vec<Digest>>,
}

impl ImageFacts {
    /// One image object (the Engine API's answer) or an array of them (what the CLIs print).
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        let json: InspectJson = match serde_json::from_slice::<Vec<InspectJson>>(bytes) {
            Ok(mut many) if !many.is_empty() => many.swap_remove(0),
            _ => serde_json::from_slice(bytes)?,
        };
        // podman's CLI prints the bare hex; everyone else `sha256:<hex>`.
        let id = if json.id.contains(':') {
            json.id
        } else {
            format!("sha256:{}", json.id)
        };
        let platform = match (json.os, json.architecture) {
            (Some(os), Some(arch)) if !os.is_empty() && !arch.is_empty() => {
                let variant = json.variant.filter(|v| !v.is_empty());
                Some(match variant {
                    Some(variant) => format!("{os}/{arch}/{variant}"),
                    None => format!("{os}/{arch}"),
                })
            }
            _ => None,
        };
        Ok(Self {
            id,
            repo_tags: json.repo_tags.unwrap_or_default(),
            diff_ids: json.root_fs.and_then(|r| r.layers).unwrap_or_default(),
            platform,
            size: json.size.as_ref().and_then(serde_json::Value::as_u64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYER: &str = "sha256:0aced4ecfcce9b90930ca600911446237d36bfe896ed2af7556f8bc1427acea3";

    #[test]
    fn reads_the_api_object_and_the_cli_array_alike() {
        let api = format!(
            r#"{{"Id":"sha256:2a57","RepoTags":["localhost/myimg:dev"],"Os":"linux","Architecture":"amd64","RootFS":{{"Type":"layers","Layers":["{LAYER}"]}}}}"#
        );
        let podman_cli = format!(
            r#"[{{"Id":"2a57","RepoTags":["localhost/myimg:dev"],"Os":"linux","Architecture":"amd64","RootFS":{{"Type":"layers","Layers":["{LAYER}"]}}}}]"#
        );
        let expected = ImageFacts {
            id: "sha256:2a57".into(),
            repo_tags: vec!["localhost/myimg:dev".into()],
            diff_ids: vec![LAYER.parse().unwrap()],
            platform: Some("linux/amd64".into()),
            size: None,
        };
        assert_eq!(ImageFacts::parse(api.as_bytes()).unwrap(), expected);
        assert_eq!(ImageFacts::parse(podman_cli.as_bytes()).unwrap(), expected);
    }

    #[test]
    fn an_image_without_tags_or_layers_has_empty_lists() {
        let facts = ImageFacts::parse(br#"{"Id":"sha256:1","RepoTags":null}"#).unwrap();
        assert!(facts.repo_tags.is_empty() && facts.diff_ids.is_empty());
        assert_eq!(facts.platform, None);
    }

    #[test]
    fn the_size_the_engine_says_is_read() {
        let facts = ImageFacts::parse(br#"{"Id":"sha256:1","Size":7654321}"#).unwrap();
        assert_eq!(facts.size, Some(7_654_321));
        let facts = ImageFacts::parse(br#"[{"Id":"1","Size":-1}]"#).unwrap();
        assert_eq!(facts.size, None);
    }
}
