//! Reading what a registry holds: the catalog and each repository's tags (`Link`-header
//! pagination, same origin only) for `ls` and `prune`, a manifest by tag or digest (theirs,
//! `why`'s, and the read-back after an engine's own push), and an image's config. Every body is
//! size-capped and every wait bounded by the request timeout.

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue, LINK};
use reqwest::{Method, Response, StatusCode, Url};
use serde::Deserialize;

use super::auth::Scope;
use super::request::Request;
use super::{RegistryClient, check_reference};
use crate::image::digest::Digest;
use crate::image::go_json::null_as_empty;
use crate::image::http_body::{CappedBodyError, read_capped};
use crate::image::oci::MediaType;
use crate::plumbing::error::{Error, ExitCode, Result};

/// The most one page of `_catalog` or `tags/list` may hold.
const PAGE_LIMIT: usize = 4 << 20;
/// Pages followed for one listing; a registry that links on without end is stopped here.
const MAX_PAGES: usize = 1000;
/// Entries asked for per page.
const PAGE_SIZE: usize = 100;
/// distribution refuses manifests over 4 MiB.
const MANIFEST_LIMIT: usize = 4 << 20;
/// Image configs are small JSON; a history of thousands of layers still fits.
const CONFIG_LIMIT: usize = 8 << 20;

/// A manifest read by tag or digest: its digest, declared type and bytes.
#[derive(Debug, Clone)]
pub struct FetchedManifest {
    pub digest: Digest,
    pub media_type: String,
    pub bytes: Bytes,
}

#[derive(Debug, Deserialize)]
struct CatalogPage {
    #[serde(default, deserialize_with = "null_as_empty")]
    repositories: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct TagsPage {
    #[serde(default, deserialize_with = "null_as_empty")]
    tags: Vec<String>,
}

impl RegistryClient {
    /// `GET /v2/_catalog`, every page: the repository names, in the registry's order; or the
    /// registry's refusal to list them (401, 403 or 404, as many proxies and hosted registries
    /// answer), for the caller to say what to do instead.
    pub async fn catalog(&self) -> Result<Catalog> {
        let what = || format!("listing the repositories of {}", self.known_as());
        let refused = |cause: Error| Catalog::Refused(self.failed(what(), cause));
        let first = self
            .transport()
            .url(&format!("_catalog?n={PAGE_SIZE}"))
            .map_err(|cause| self.failed(what(), cause))?;
        let pages = match self.pages(first, Scope::catalog()).await {
            Err(Missing) => {
                return Ok(refused(Error::new(
                    ExitCode::Registry,
                    "the registry answered 404 Not Found: it serves no catalog",
                )));
            }
            Ok(Err(cause)) if refusal_status(&cause).is_some() => return Ok(refused(cause)),
            Ok(pages) => pages.map_err(|cause| self.failed(what(), cause))?,
        };
        let mut names = Vec::new();
        for page in pages {
            let page: CatalogPage =
                parse_page(&page, "_catalog").map_err(|cause| self.failed(what(), cause))?;
            names.extend(page.repositories);
        }
        Ok(Catalog::Listed(names))
    }

    /// `GET /v2/<repo>/tags/list`, every page; `None` when the registry does not know the
    /// repository (404, NAME_UNKNOWN).
    pub async fn tags(&self, repo: &str) -> Result<Option<Vec<String>>> {
        let what = || format!("listing the tags of {}", self.target(repo));
        let attempt = async {
            let first = self.repo_url(repo, &format!("tags/list?n={PAGE_SIZE}"))?;
            let pages = match self.pages(first, Scope::pull(repo)).await {
                Ok(pages) => pages,
                Err(Missing) => return Ok(None),
            };
            let mut tags = Vec::new();
            for page in pages? {
                let page: TagsPage = parse_page(&page, "tags/list")?;
                tags.extend(page.tags);
            }
            Ok(Some(tags))
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// `GET /v2/<repo>/manifests/<reference>` to read only (`ls`, `prune`, `why`), with pull
    /// scope; `None` when there is no such manifest. A digest asked for, or answered in
    /// `Docker-Content-Digest`, must be the hash of the bytes.
    pub async fn manifest(&self, repo: &str, reference: &str) -> Result<Option<FetchedManifest>> {
        self.get_manifest(repo, reference, Scope::pull(repo)).await
    }

    /// [`RegistryClient::manifest`] within a push to `repo` (what an engine pushed, read back):
    /// asked with the push's scope, so a token-auth registry's push token serves it too.
    pub async fn manifest_in_push(
        &self,
        repo: &str,
        reference: &str,
    ) -> Result<Option<FetchedManifest>> {
        self.get_manifest(repo, reference, Scope::push(repo)).await
    }

    async fn get_manifest(
        &self,
        repo: &str,
        reference: &str,
        scope: Scope,
    ) -> Result<Option<FetchedManifest>> {
        let what = || format!("reading manifest {reference} in {}", self.target(repo));
        let attempt = async {
            check_reference(reference)?;
            let url = self.repo_url(repo, &format!("manifests/{reference}"))?;
            let mut request = Request::new(Method::GET, url, scope);
            request
                .headers
                .insert(ACCEPT, header(&MediaType::manifests_accept()));
            let response = self.send(request).await?;
            match response.status() {
                StatusCode::OK => {}
                StatusCode::NOT_FOUND => return Ok(None),
                _ => return Err(self.answer_error(response).await),
            }
            let media_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let answered = response
                .headers()
                .get("Docker-Content-Digest")
                .and_then(|value| value.to_str().ok())
                .map(str::to_string);
            let bytes = self.body(response, MANIFEST_LIMIT, "manifest").await?;
            let digest = Digest::of_bytes(&bytes);
            let claimed = answered.into_iter().chain(
                reference
                    .starts_with("sha256:")
                    .then(|| reference.to_string()),
            );
            for claimed in claimed {
                if claimed != digest.as_str() {
                    return Err(Error::new(
                        ExitCode::Registry,
                        format!(
                            "the registry answered bytes that hash to {digest}, not {}",
                            crate::plumbing::output::shown(&claimed)
                        ),
                    ));
                }
            }
            Ok(Some(FetchedManifest {
                digest,
                media_type,
                bytes,
            }))
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// `GET /v2/<repo>/blobs/<digest>` of a small JSON blob (an image config), checked against
    /// its digest; `None` when the registry does not have it.
    pub async fn small_blob(&self, repo: &str, digest: &Digest) -> Result<Option<Bytes>> {
        let what = || format!("reading blob {} in {}", digest.short(), self.target(repo));
        let attempt = async {
            let url = self.repo_url(repo, &format!("blobs/{digest}"))?;
            let response = self
                .send(Request::new(Method::GET, url, Scope::pull(repo)))
                .await?;
            let response = match response.status() {
                StatusCode::OK => response,
                StatusCode::NOT_FOUND => return Ok(None),
                // A redirect to storage is followed by the transport; anything else is an error.
                _ => return Err(self.answer_error(response).await),
            };
            let bytes = self.body(response, CONFIG_LIMIT, "blob").await?;
            if Digest::of_bytes(&bytes) != *digest {
                return Err(Error::new(
                    ExitCode::Registry,
                    "the registry answered bytes that do not match the digest",
                ));
            }
            Ok(Some(bytes))
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// Every page of a listing from `first` on, following `Link: <...>; rel="next"` on the
    /// registry's own origin. `Err(Missing)` when the first page is a 404.
    async fn pages(&self, first: Url, scope: Scope) -> Result<Result<Vec<Bytes>>, Missing> {
        let mut pages = Vec::new();
        // Every page asked for: a registry whose Link names one of them again is going round.
        let mut asked = std::collections::HashSet::new();
        let mut next = Some(first);
        while let Some(url) = next.take() {
            if !asked.insert(url.clone()) {
                return Ok(Err(Error::new(
                    ExitCode::Registry,
                    format!(
                        "the registry's Link header names page {} again, after {} pages; stopped there",
                        crate::plumbing::output::shown(url.as_str()),
                        pages.len()
                    ),
                )));
            }
            if pages.len() >= MAX_PAGES {
                return Ok(Err(Error::new(
                    ExitCode::Registry,
                    format!("the registry links on past {MAX_PAGES} pages; stopped there"),
                )));
            }
            let response = match self
                .send(Request::new(Method::GET, url.clone(), scope.clone()))
                .await
            {
                Ok(response) => response,
                Err(err) => return Ok(Err(err)),
            };
            if response.status() == StatusCode::NOT_FOUND && pages.is_empty() {
                return Err(Missing);
            }
            if response.status() != StatusCode::OK {
                return Ok(Err(self.answer_error(response).await));
            }
            next = match next_page(&url, response.headers().get(LINK)) {
                Ok(next) => next,
                Err(err) => return Ok(Err(err)),
            };
            if next
                .as_ref()
                .is_some_and(|next| !self.transport().is_origin(next))
            {
                return Ok(Err(Error::new(
                    ExitCode::Registry,
                    "the registry's next page is on another origin; we do not follow it there",
                )));
            }
            let page = match self.body(response, PAGE_LIMIT, "listing page").await {
                Ok(page) => page,
                Err(err) => return Ok(Err(err)),
            };
            // The same page under another URL (a `last=` that does not move on) goes round too.
            if next.is_some() && pages.contains(&page) {
                return Ok(Err(Error::new(
                    ExitCode::Registry,
                    format!(
                        "the registry answered the same page again at {}, after {} pages; stopped there",
                        crate::plumbing::output::shown(url.as_str()),
                        pages.len()
                    ),
                )));
            }
            pages.push(page);
        }
        Ok(Ok(pages))
    }

    /// The whole body, at most `limit` bytes, within the request timeout.
    async fn body(&self, response: Response, limit: usize, what: &str) -> Result<Bytes> {
        let wait = self.transport().limits.request_timeout;
        match tokio::time::timeout(wait, read_capped(response, limit)).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(CappedBodyError::TooLarge { limit })) => Err(Error::new(
                ExitCode::Registry,
                format!("the {what} is larger than {limit} bytes; not read"),
            )),
            Ok(Err(CappedBodyError::Read(err))) => Err(Error::new(
                ExitCode::Registry,
                format!("the {what} broke off"),
            )
            .with_source(err)),
            Err(_) => Err(Error::new(
                ExitCode::Registry,
                format!(
                    "the {what} did not arrive within {}",
                    crate::plumbing::limits::seconds_text(wait)
                ),
            )),
        }
    }
}

/// A listing the registry does not have (404 on its first page).
#[derive(Debug)]
struct Missing;

/// What `GET /v2/_catalog` gave.
#[derive(Debug)]
pub enum Catalog {
    /// The repository names, in the registry's order.
    Listed(Vec<String>),
    /// The registry will not list its repositories (401, 403 or 404): why, as an error.
    Refused(Error),
}

/// The 401 or 403 a registry answered, wherever it is in `error`'s causes.
fn refusal_status(error: &Error) -> Option<StatusCode> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = next {
        if let Some(answer) = err.downcast_ref::<super::RegistryResponse>()
            && matches!(
                answer.status,
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            )
        {
            return Some(answer.status);
        }
        next = err.source();
    }
    None
}

fn parse_page<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|err| {
        Error::new(
            ExitCode::Registry,
            format!("the registry's {what} answer is not the JSON the distribution spec names"),
        )
        .with_source(err)
    })
}

/// The `rel="next"` target of an answer's `Link` header, resolved against the page's URL.
pub(crate) fn next_page(page: &Url, link: Option<&HeaderValue>) -> Result<Option<Url>> {
    let Some(link) = link else {
        return Ok(None);
    };
    let text = link.to_str().map_err(|_| {
        Error::new(
            ExitCode::Registry,
            "the registry's Link header is not ASCII",
        )
    })?;
    let Some(target) = next_link(text) else {
        return Ok(None);
    };
    page.join(target).map(Some).map_err(|err| {
        Error::new(
            ExitCode::Registry,
            format!(
                "the registry's Link header names no usable URL: {}",
                crate::plumbing::output::shown(target)
            ),
        )
        .with_source(err)
    })
}

/// `</v2/_catalog?last=b&n=2>; rel="next"` -> `/v2/_catalog?last=b&n=2` (RFC 8288, the first
/// link whose `rel` names `next`).
fn next_link(header: &str) -> Option<&str> {
    header.split(',').find_map(|link| {
        let link = link.trim();
        let (target, params) = link.strip_prefix('<')?.split_once('>')?;
        let is_next = params.split(';').any(|param| {
            param
                .trim()
                .strip_prefix("rel=")
                .map(|rel| rel.trim_matches('"'))
                .is_some_and(|rel| rel.split_whitespace().any(|r| r == "next"))
        });
        is_next.then_some(target)
    })
}

fn header(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("*/*"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_link_is_found_among_others() {
        assert_eq!(
            next_link(r#"</v2/_catalog?last=b&n=2>; rel="next""#),
            Some("/v2/_catalog?last=b&n=2")
        );
        assert_eq!(
            next_link(r#"<https://x/prev>; rel="prev", </v2/a/tags/list?last=t>; rel=next"#),
            Some("/v2/a/tags/list?last=t")
        );
        assert_eq!(next_link(r#"</v2/x>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }
}
