//! Admission as a cluster's policy engines answer a write that sets an image they do not allow,
//! in their own words and codes: Gatekeeper's webhook (403 Forbidden), Kyverno's (400, no
//! reason, a message of several lines) and a ValidatingAdmissionPolicy (403 Forbidden). A policy
//! on workloads checks every write of a template, server-side dry runs too, as kube-apiserver
//! does; a policy on pods (a Gatekeeper constraint matching kind Pod) lets the write through
//! and refuses the controller's pods instead.

use serde_json::Value;

use super::wire::status;

/// Which policy engine refuses images outside an allowed prefix.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Engine {
    Gatekeeper,
    Kyverno,
    ValidatingAdmissionPolicy,
}

/// Only images under `allowed` may run, as `engine` says it; checked on pods rather than on
/// workloads when `pods`.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub engine: Engine,
    pub allowed: String,
    pub pods: bool,
}

impl Policy {
    /// The refusal of `workload` (`deployments`, `web`, the object as it would be stored), or
    /// `None` when every container's image is allowed or the policy is on pods.
    pub(super) fn check(
        &self,
        resource: &str,
        name: &str,
        workload: &Value,
    ) -> Option<(u16, Value)> {
        if self.pods {
            return None;
        }
        self.refusal(resource, name, &workload["spec"]["template"]["spec"])
    }

    /// The refusal of a pod of `template` (a pod spec) that a controller creates, as the
    /// controller gets it: the message of the API server's answer.
    pub(super) fn pod_refusal(&self, template: &Value) -> Option<String> {
        if !self.pods {
            return None;
        }
        let (_, status) = self.refusal("pods", "", template)?;
        status["message"].as_str().map(str::to_string)
    }

    fn refusal(&self, resource: &str, name: &str, spec: &Value) -> Option<(u16, Value)> {
        let (at, container) = spec["containers"]
            .as_array()?
            .iter()
            .enumerate()
            .find(|(_, c)| !c["image"].as_str().unwrap_or("").starts_with(&self.allowed))?;
        let container_name = container["name"].as_str().unwrap_or("");
        let image = container["image"].as_str().unwrap_or("");
        let allowed = &self.allowed;
        Some(match self.engine {
            Engine::Gatekeeper => {
                let message = format!(
                    "admission webhook \"validation.gatekeeper.sh\" denied the request: [allowed-repos] container <{container_name}> has an invalid image repo <{image}>, allowed repos are [\"{allowed}\"]"
                );
                (403, status(403, "Forbidden", &message))
            }
            Engine::Kyverno => {
                let kind = match resource {
                    "statefulsets" => "StatefulSet",
                    "daemonsets" => "DaemonSet",
                    _ => "Deployment",
                };
                let message = format!(
                    "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource {kind}/default/{name} was blocked due to the following policies\n\nrestrict-image-registries:\n  autogen-validate-registries: 'validation error: Unknown image registry. rule autogen-validate-registries\n    failed at path /spec/template/spec/containers/{at}/image/'\n"
                );
                (400, status(400, "", &message))
            }
            Engine::ValidatingAdmissionPolicy => {
                let message = format!(
                    "{resource}.apps \"{name}\" is forbidden: ValidatingAdmissionPolicy 'allowed-registries' with binding 'allowed-registries-binding' denied request: failed expression: object.spec.template.spec.containers.all(c, c.image.startsWith('{allowed}'))"
                );
                (403, status(403, "Forbidden", &message))
            }
        })
    }
}
