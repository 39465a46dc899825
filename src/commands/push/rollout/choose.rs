//! Which of a workload's containers `push --rollout` sets: the ones whose image is the
//! repository being pushed on this registry (under any of its hosts' spellings), or without a
//! registry the repository the nodes get; `=CONTAINER` names one. None, or several running
//! different images, stops the push before anything is sent. Pure.

use crate::cluster::rollout::{TemplateContainer, Workload, WorkloadKind};
use crate::delivery::push::Landing;
use crate::diagnosis::{on_registry, parse_workload};
use crate::image::reference::ImageName;
use crate::plumbing::error::{Error, ExitCode, Result};

/// One `--rollout KIND/NAME[=CONTAINER]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub kind: WorkloadKind,
    pub name: String,
    pub container: Option<String>,
}

impl Wanted {
    /// `deployment/web`
    pub(crate) fn label(&self) -> String {
        format!("{}/{}", self.kind.singular(), self.name)
    }
}

/// Whether `image` is `landing`'s repository.
fn runs(image: &str, landing: &Landing<'_>) -> bool {
    let Ok(name) = ImageName::parse(image) else {
        return false;
    };
    match landing.registry {
        Some(registry) => on_registry(image, registry) && name.path == landing.repository,
        None => name.familiar_repository() == landing.repository,
    }
}

/// The tag and digest an image of the repository names (its host's spelling aside).
fn version(image: &str) -> Option<(String, Option<String>)> {
    let name = ImageName::parse(image).ok()?;
    Some((name.tag_or_default().to_string(), name.digest))
}

/// The containers of `facts` to set.
pub(crate) fn containers(
    wanted: &Wanted,
    namespace: &str,
    workload: &Workload,
    landing: &Landing<'_>,
) -> Result<Vec<TemplateContainer>> {
    let containers = workload.containers();
    let facts = containers.as_slice();
    let whose = || format!("{} {namespace}/{}", wanted.kind.singular(), wanted.name);
    if let Some(named) = &wanted.container {
        return match facts.iter().find(|c| &c.name == named) {
            Some(container) => Ok(vec![container.clone()]),
            None => Err(refusal(
                format!("{} has no container {named:?}", whose()),
                wanted,
                facts,
            )),
        };
    }
    let matching: Vec<TemplateContainer> = facts
        .iter()
        .filter(|container| runs(&container.image, landing))
        .cloned()
        .collect();
    let where_ = match landing.registry {
        Some(registry) => format!("{} on {}", landing.repository, registry.host),
        None => format!("{} (the name the nodes get)", landing.repository),
    };
    match matching.first() {
        None => Err(refusal(
            format!("no container of {} runs {where_}", whose()),
            wanted,
            facts,
        )),
        Some(first)
            if matching
                .iter()
                .any(|c| version(&c.image) != version(&first.image)) =>
        {
            Err(refusal(
                format!(
                    "{} containers of {} run {where_}, as different images",
                    matching.len(),
                    whose()
                ),
                wanted,
                facts,
            ))
        }
        Some(_) => Ok(matching),
    }
}

/// Exit 2: what was found, every container with its image, and the `=CONTAINER` form.
fn refusal(message: String, wanted: &Wanted, facts: &[TemplateContainer]) -> Error {
    let listed: Vec<String> = facts
        .iter()
        .map(|c| {
            let init = if c.init { " (init)" } else { "" };
            format!("{}{init}: {}", c.name, c.image)
        })
        .collect();
    let example = facts
        .iter()
        .find(|c| !c.init)
        .or(facts.first())
        .map_or("CONTAINER", |c| c.name.as_str());
    Error::new(ExitCode::Usage, format!("{message}; nothing was pushed"))
        .with_hint(format!("its containers: {}", listed.join(", ")))
        .with_hint(format!(
            "name the one to set: --rollout {}={example}",
            wanted.label()
        ))
}

/// `deploy/web=app` -> the workload and the container.
pub(crate) fn parse(text: &str) -> Result<Wanted> {
    let (workload, container) = match text.split_once('=') {
        Some((workload, container)) if !container.is_empty() => {
            (workload, Some(container.to_string()))
        }
        Some(_) => {
            return Err(Error::new(
                ExitCode::Usage,
                format!("--rollout {text:?}: the container after = is empty"),
            ));
        }
        None => (text, None),
    };
    let (kind, name) = parse_workload(workload)?;
    Ok(Wanted {
        kind,
        name,
        container,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::hosting::{LocalRegistry, RegistrySource};
    use crate::image::reference::RegistryHost;
    use serde_json::json;

    fn registry() -> LocalRegistry {
        LocalRegistry {
            host: RegistryHost::parse("localhost:5001").unwrap(),
            host_from_container_runtime: RegistryHost::parse("kind-registry:5000").unwrap(),
            host_from_cluster_network: None,
            service: None,
            host_advertised: true,
            help: None,
            source: RegistrySource::Configmap,
        }
    }

    fn facts(containers: &[(&str, &str, bool)]) -> Workload {
        let list = |init: bool| -> Vec<serde_json::Value> {
            containers
                .iter()
                .filter(|c| c.2 == init)
                .map(|(name, image, _)| json!({"name": name, "image": image}))
                .collect()
        };
        Workload::Deployment(
            serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"initContainers": list(true), "containers": list(false)}}}}))
            .unwrap(),
        )
    }

    fn names(chosen: &[TemplateContainer]) -> Vec<&str> {
        chosen.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn the_repository_is_matched_under_every_spelling_of_the_registry_init_containers_too() {
        let registry = registry();
        let landing = Landing {
            registry: Some(&registry),
            repository: "myimg",
        };
        let wanted = parse("deploy/web").unwrap();
        let workload = facts(&[
            ("setup", "KIND-REGISTRY:5000/myimg:dev", true),
            ("web", "127.0.0.1:5001/myimg:dev", false),
            ("side", "kind-registry:5000/other:dev", false),
            ("proxy", "docker.io/library/myimg:dev", false),
        ]);
        let chosen = containers(&wanted, "default", &workload, &landing).unwrap();
        assert_eq!(names(&chosen), ["setup", "web"]);
    }

    #[test]
    fn none_or_several_different_is_exit_2_listing_the_containers_and_the_form() {
        let registry = registry();
        let landing = Landing {
            registry: Some(&registry),
            repository: "myimg",
        };
        let wanted = parse("deployment.apps/web").unwrap();
        let none = facts(&[("web", "nginx:1.27", false)]);
        let err = containers(&wanted, "default", &none, &landing).unwrap_err();
        assert_eq!(err.exit_code(), ExitCode::Usage);
        assert!(
            err.message()
                .contains("no container of deployment default/web runs myimg on localhost:5001"),
            "{}",
            err.message()
        );
        let hints = err.hints().join("\n");
        assert!(hints.contains("web: nginx:1.27"), "{hints}");
        assert!(hints.contains("--rollout deployment/web=web"), "{hints}");
        let two = facts(&[
            ("a", "kind-registry:5000/myimg:v1", false),
            ("b", "kind-registry:5000/myimg:v2", false),
        ]);
        let err = containers(&wanted, "default", &two, &landing).unwrap_err();
        assert!(err.message().contains("2 containers"), "{}", err.message());
        let named = parse("deploy/web=b").unwrap();
        assert_eq!(
            names(&containers(&named, "default", &two, &landing).unwrap()),
            ["b"]
        );
        let missing = parse("deploy/web=c").unwrap();
        let err = containers(&missing, "default", &two, &landing).unwrap_err();
        assert!(
            err.message().contains("no container \"c\""),
            "{}",
            err.message()
        );
    }

    #[test]
    fn without_a_registry_the_node_load_name_is_matched() {
        let landing = Landing {
            registry: None,
            repository: "myimg",
        };
        let wanted = parse("ds/agent").unwrap();
        let workload = facts(&[("agent", "docker.io/library/myimg:dev-0123456789ab", false)]);
        assert_eq!(
            names(&containers(&wanted, "default", &workload, &landing).unwrap()),
            ["agent"]
        );
        assert!(parse("deploy/web=").is_err());
        assert!(parse("pod/web").is_err());
    }
}
