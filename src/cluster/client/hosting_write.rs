//! Writing ConfigMap `kube-public/local-registry-hosting`: one key set or removed, every other key
//! kept, each write conditional on the resourceVersion read and retried after a conflict.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};

use super::Cluster;
use crate::cluster::hosting::{HOSTING_CONFIGMAP, HOSTING_NAME, HOSTING_NAMESPACE};
use crate::plumbing::error::{Error, ExitCode, Result};

/// Reads and writes before giving up on a ConfigMap that keeps changing under us.
const MAX_ATTEMPTS: u32 = 5;
const FIELD_MANAGER: &str = "kubectl-registry";

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Updated,
    /// The key already held that value: nothing was sent.
    Unchanged,
    Deleted,
    /// There was nothing to remove.
    Absent,
}

impl Written {
    /// kubectl's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "configured",
            Self::Unchanged => "unchanged",
            Self::Deleted => "deleted",
            Self::Absent => "unchanged (nothing was advertised)",
        }
    }
}

/// One step of a write, to name the permission a 403 says is missing.
#[derive(Debug, Clone, Copy)]
enum Verb {
    Get,
    Create,
    Update,
    Delete,
}

impl Verb {
    fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }

    fn doing(self) -> String {
        let verb = match self {
            Self::Get => "reading",
            Self::Create => "creating",
            Self::Update => "updating",
            Self::Delete => "deleting",
        };
        format!("{verb} ConfigMap {HOSTING_CONFIGMAP}")
    }
}

/// How one conditional write ended.
enum Attempt {
    Done(Written),
    /// Someone else wrote between our read and our write: read again.
    Conflict,
}

/// The hosting ConfigMap's writes (`advertise`), through `Api<ConfigMap>` in `kube-public`.
pub struct HostingWrites<'a> {
    cluster: &'a Cluster,
}

impl<'a> HostingWrites<'a> {
    pub fn new(cluster: &'a Cluster) -> Self {
        Self { cluster }
    }

    /// Sets `key` to `value` in the hosting ConfigMap, creating it when absent.
    pub async fn set_hosting_key(&self, key: &str, value: &str) -> Result<Written> {
        self.retry_on_conflict(|api| async move {
            let Some(mut configmap) = self.read_for_write(&api).await? else {
                let fresh = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(HOSTING_NAME.to_string()),
                        namespace: Some(HOSTING_NAMESPACE.to_string()),
                        ..ObjectMeta::default()
                    },
                    data: Some(BTreeMap::from([(key.to_string(), value.to_string())])),
                    ..ConfigMap::default()
                };
                return self.written(
                    api.create(&post_params(), &fresh).await,
                    Verb::Create,
                    Written::Created,
                );
            };
            let data = configmap.data.get_or_insert_with(BTreeMap::new);
            if data.get(key).map(String::as_str) == Some(value) {
                return Ok(Attempt::Done(Written::Unchanged));
            }
            data.insert(key.to_string(), value.to_string());
            // The object carries the resourceVersion we read: the server refuses it if that moved.
            let replaced = api.replace(HOSTING_NAME, &post_params(), &configmap).await;
            self.written(replaced, Verb::Update, Written::Updated)
        })
        .await
    }

    /// Removes `key`; the ConfigMap itself goes too when no other key is left in it.
    pub async fn remove_hosting_key(&self, key: &str) -> Result<Written> {
        self.retry_on_conflict(|api| async move {
            let Some(mut configmap) = self.read_for_write(&api).await? else {
                return Ok(Attempt::Done(Written::Absent));
            };
            let data = configmap.data.get_or_insert_with(BTreeMap::new);
            if data.remove(key).is_none() {
                return Ok(Attempt::Done(Written::Absent));
            }
            let others_left = !data.is_empty()
                || configmap
                    .binary_data
                    .as_ref()
                    .is_some_and(|binary| !binary.is_empty());
            if others_left {
                let replaced = api.replace(HOSTING_NAME, &post_params(), &configmap).await;
                return self.written(replaced, Verb::Update, Written::Updated);
            }
            let params = DeleteParams::default().preconditions(Preconditions {
                resource_version: configmap.metadata.resource_version.clone(),
                uid: None,
            });
            match api.delete(HOSTING_NAME, &params).await {
                // Deleted by someone else meanwhile: the advertisement is gone all the same.
                Err(kube::Error::Api(status)) if status.is_not_found() => {
                    Ok(Attempt::Done(Written::Absent))
                }
                answer => self.written(answer, Verb::Delete, Written::Deleted),
            }
        })
        .await
    }

    async fn retry_on_conflict<F, Fut>(&self, mut attempt: F) -> Result<Written>
    where
        F: FnMut(Api<ConfigMap>) -> Fut,
        Fut: Future<Output = Result<Attempt>>,
    {
        for _ in 0..MAX_ATTEMPTS {
            let api = Api::namespaced(self.cluster.client.clone(), HOSTING_NAMESPACE);
            match attempt(api).await? {
                Attempt::Done(written) => return Ok(written),
                Attempt::Conflict => {
                    self.cluster.printer.debug(&format!(
                        "ConfigMap {HOSTING_CONFIGMAP} changed while we wrote it; reading it again"
                    ));
                }
            }
        }
        Err(Error::new(
            ExitCode::Cluster,
            format!(
                "writing ConfigMap {HOSTING_CONFIGMAP}: it changed under us {MAX_ATTEMPTS} times in a row"
            ),
        )
        .with_hint("something else keeps rewriting it; find it (`kubectl -n kube-public get configmap local-registry-hosting -o yaml` shows its managedFields) and try again"))
    }

    async fn read_for_write(&self, api: &Api<ConfigMap>) -> Result<Option<ConfigMap>> {
        match api.get(HOSTING_NAME).await {
            Ok(configmap) => Ok(Some(configmap)),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
            Err(err) => Err(self.write_error(Verb::Get, err)),
        }
    }

    fn written<T>(&self, answer: kube::Result<T>, verb: Verb, done: Written) -> Result<Attempt> {
        match answer {
            Ok(_) => Ok(Attempt::Done(done)),
            // 409: a create that lost a race, or a write whose resourceVersion is stale.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Conflict),
            Err(err) => Err(self.write_error(verb, err)),
        }
    }

    /// A 403 names the permission that is missing; anything else is a request error as for reads.
    fn write_error(&self, verb: Verb, err: kube::Error) -> Error {
        match err {
            kube::Error::Api(status) if status.is_forbidden() => Error::new(
                ExitCode::Cluster,
                format!(
                    "{}: not allowed: the credentials of {} may not {} configmaps in namespace {HOSTING_NAMESPACE}",
                    verb.doing(),
                    self.cluster.target.describe(),
                    verb.as_str()
                ),
            )
            .with_source(status.message.clone())
            .with_hint(format!(
                "advertising needs get, create, update and delete on configmaps in {HOSTING_NAMESPACE}; `kubectl auth can-i {} configmaps -n {HOSTING_NAMESPACE}` checks it; a cluster admin can grant it with a Role and RoleBinding",
                verb.as_str()
            )),
            other => self.cluster.request_error(verb.doing(), other),
        }
    }
}

fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_string()),
    }
}
