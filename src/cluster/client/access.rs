//! Whether these credentials may do something: the one SelfSubjectAccessReview, as
//! `kubectl auth can-i VERB RESOURCE[/SUBRESOURCE] -n NAMESPACE` asks the API server's own
//! authorizer.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use super::{Cluster, Lookup};
use crate::plumbing::error::Result;

impl Cluster {
    /// Whether these credentials may `verb` `resource` (`deployments`, `pods/log`,
    /// `pods/portforward`) of API group `group` (`""` for the core group) in `namespace`.
    /// A server without the authorization API, or one that does not let us ask, is taken as
    /// yes: the request itself will tell.
    pub async fn may(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<bool> {
        let (resource, subresource) = match resource.split_once('/') {
            Some((resource, sub)) => (resource, Some(sub.to_string())),
            None => (resource, None),
        };
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource: subresource.clone(),
                    namespace: Some(namespace.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &review).await;
        let asked = match subresource {
            Some(sub) => format!("{resource}/{sub}"),
            None => resource.to_string(),
        };
        match self.lookup(answer, || {
            format!("asking whether we may {verb} {asked} in {namespace}")
        })? {
            Lookup::Found(review) => Ok(review.status.is_some_and(|status| status.allowed)),
            Lookup::NotFound | Lookup::Forbidden => Ok(true),
        }
    }
}
