//! What we take from the API server, as a layer over kube's HTTP service: each answer's body is
//! capped (kube's client buffers whole bodies), each answer must arrive whole within a bound of
//! its own (a server that trickles a byte a second never times out a read), and an answer that
//! is not the Kubernetes API (a proxy's HTML login page, a redirect to one) is an error saying
//! what came back instead. Streams are not answers: a watch (`watch=true`), a followed log
//! (`follow=true`) and an upgraded connection (port-forward, exec) keep only their own bounds.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::{BodyExt, Limited};
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Layer, Service};

/// The most we buffer of one API server answer. A list of 5000 nodes is about 100 MB with their
/// image lists, but we list nodes in pages (`NODE_PAGE`), and no single object may exceed
/// etcd's 1.5 MiB request limit; 64 MiB leaves lists of anything we read ample room.
pub(crate) const API_ANSWER_LIMIT: usize = 64 << 20;
/// How much of an HTML page we read to find its `<title>`.
const PAGE_SAMPLE: usize = 16 << 10;

/// The layer: [`Guarded`] around kube's service.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Guard {
    pub limit: usize,
    /// The most time one answer may take, from the request to its last byte.
    pub within: Duration,
}

impl<S> Layer<S> for Guard {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            limit: self.limit,
            within: self.within,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Guarded<S> {
    inner: S,
    limit: usize,
    within: Duration,
}

type Answer<B> = Response<Bounded<Limited<B>>>;

impl<S, ReqBody, B> Service<Request<ReqBody>> for Guarded<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: HttpBody<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Answer<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let within = self.within;
        let deadline = (!is_stream(&request)).then(|| Instant::now() + within);
        let answer = self.inner.call(request);
        let limit = self.limit;
        Box::pin(async move {
            let response = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, answer)
                    .await
                    .map_err(|_| Box::new(AnswerTooSlow { within }) as BoxError)?,
                None => answer.await,
            }
            .map_err(Into::into)?;
            if let Some(not_the_api) = NotTheApi::of(&response) {
                let page = sample(response.into_body()).await;
                return Err(Box::new(not_the_api.with_page(&page)) as BoxError);
            }
            Ok(response.map(|body| Bounded {
                body: Limited::new(body, limit),
                deadline: deadline.map(|deadline| Box::pin(tokio::time::sleep_until(deadline))),
                within,
            }))
        })
    }
}

/// A request whose answer is a stream that lasts as long as it is wanted: a watch, a followed
/// log, an upgrade to a connection of its own (port-forward, exec). Its reads keep their own
/// bound (kube's read timeout, the watch's own timeout), not the answer's.
fn is_stream<B>(request: &Request<B>) -> bool {
    let query = request.uri().query().unwrap_or_default();
    let streams = query
        .split('&')
        .any(|pair| matches!(pair, "watch=true" | "watch=1" | "follow=true" | "follow=1"));
    streams || request.headers().contains_key(header::UPGRADE)
}

/// An answer that did not arrive whole in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnswerTooSlow {
    pub within: Duration,
}

impl std::fmt::Display for AnswerTooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the answer did not arrive whole within {}",
            crate::plumbing::limits::seconds_text(self.within)
        )
    }
}

impl std::error::Error for AnswerTooSlow {}

/// An answer's body that fails once its deadline passes, however its bytes trickle in.
pub(crate) struct Bounded<B> {
    body: B,
    deadline: Option<Pin<Box<Sleep>>>,
    within: Duration,
}

impl<B> HttpBody for Bounded<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(deadline) = this.deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            let within = this.within;
            return Poll::Ready(Some(Err(Box::new(AnswerTooSlow { within }))));
        }
        Pin::new(&mut this.body)
            .poll_frame(cx)
            .map(|frame| frame.map(|frame| frame.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The first `PAGE_SAMPLE` bytes of a body, or what came before it failed.
async fn sample<B>(mut body: B) -> Vec<u8>
where
    B: HttpBody<Data = Bytes> + Unpin,
{
    let mut bytes = Vec::new();
    while bytes.len() < PAGE_SAMPLE {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let room = PAGE_SAMPLE - bytes.len();
                    bytes.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    bytes
}

/// An answer that is not the Kubernetes API: a web page, or a redirect (the API never
/// redirects; a login proxy does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotTheApi {
    pub status: StatusCode,
    pub redirect: Option<String>,
    pub html: bool,
    pub title: Option<String>,
}

impl NotTheApi {
    fn of<B>(response: &Response<B>) -> Option<Self> {
        let text = |name| {
            response
                .headers()
                .get(name)
                .and_then(|value: &http::HeaderValue| value.to_str().ok())
                .map(str::to_string)
        };
        let html = text(header::CONTENT_TYPE).is_some_and(|kind| {
            let kind = kind.to_ascii_lowercase();
            kind.starts_with("text/html") || kind.starts_with("application/xhtml")
        });
        let status = response.status();
        if !html && !status.is_redirection() {
            return None;
        }
        Some(Self {
            status,
            redirect: text(header::LOCATION).filter(|_| status.is_redirection()),
            html,
            title: None,
        })
    }

    fn with_page(self, page: &[u8]) -> Self {
        let title = self.html.then(|| page_title(page)).flatten();
        Self { title, ..self }
    }
}

impl std::fmt::Display for NotTheApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.status.as_u16();
        let reason = self.status.canonical_reason().unwrap_or_default();
        write!(f, "it answered {status} {reason}")?;
        if self.html {
            f.write_str(" with a web page")?;
            if let Some(title) = &self.title {
                write!(f, " titled {title:?}")?;
            }
        }
        if let Some(location) = &self.redirect {
            write!(f, " sending us to {location}")?;
        }
        f.write_str(", not the Kubernetes API")
    }
}

impl std::error::Error for NotTheApi {}

/// The text of a page's `<title>`, its white space collapsed, at most 120 characters.
fn page_title(page: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(page);
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title: Vec<&str> = text[start..end].split_whitespace().collect();
    let title = title.join(" ");
    if title.is_empty() {
        return None;
    }
    Some(match title.char_indices().nth(120) {
        Some((cut, _)) => format!("{}...", &title[..cut]),
        None => title,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_followed_logs_and_upgrades_are_streams_and_keep_their_own_bounds() {
        let request = |uri: &str, upgrade: bool| {
            let mut builder = Request::builder().uri(uri);
            if upgrade {
                builder = builder.header(header::UPGRADE, "websocket");
            }
            builder.body(()).unwrap()
        };
        for stream in [
            request(
                "/apis/apps/v1/namespaces/x/deployments?watch=true&resourceVersion=5",
                false,
            ),
            request("/api/v1/namespaces/x/pods?fieldSelector=a&watch=1", false),
            request(
                "/api/v1/namespaces/x/pods/p/log?container=c&follow=true",
                false,
            ),
            request("/api/v1/namespaces/x/pods/p/portforward?ports=5000", true),
        ] {
            assert!(is_stream(&stream), "{}", stream.uri());
        }
        for answer in [
            request(
                "/api/v1/namespaces/kube-public/configmaps/local-registry-hosting",
                false,
            ),
            request("/api/v1/nodes?limit=500", false),
            request(
                "/api/v1/namespaces/x/pods?labelSelector=watch%3Dtrue",
                false,
            ),
            request("/api/v1/namespaces/x/pods/p/log?previous=true", false),
        ] {
            assert!(!is_stream(&answer), "{}", answer.uri());
        }
    }

    #[test]
    fn titles_are_found_and_tidied() {
        assert_eq!(
            page_title(b"<html><head><TITLE>\n  Sign in -\n Corp SSO </TITLE></head>").as_deref(),
            Some("Sign in - Corp SSO")
        );
        assert_eq!(page_title(b"<html><title></title></html>"), None);
        assert_eq!(page_title(b"<html><body>no title</body></html>"), None);
        let long = format!("<title>{}</title>", "a".repeat(300));
        assert_eq!(page_title(long.as_bytes()).unwrap().len(), 123);
    }

    #[test]
    fn json_answers_pass_and_pages_and_redirects_do_not() {
        let answer = |status: u16, headers: &[(&str, &str)]| {
            let mut builder = Response::builder().status(status);
            for (name, value) in headers {
                builder = builder.header(*name, *value);
            }
            builder.body(()).unwrap()
        };
        assert_eq!(
            NotTheApi::of(&answer(200, &[("content-type", "application/json")])),
            None
        );
        assert_eq!(
            NotTheApi::of(&answer(404, &[("content-type", "text/plain")])),
            None
        );
        let page = NotTheApi::of(&answer(
            200,
            &[("content-type", "text/html; charset=utf-8")],
        ))
        .unwrap()
        .with_page(b"<title>Log in</title>");
        assert_eq!(
            page.to_string(),
            "it answered 200 OK with a web page titled \"Log in\", not the Kubernetes API"
        );
        let redirect = NotTheApi::of(&answer(302, &[("location", "https://sso.example/login")]))
            .unwrap()
            .with_page(b"");
        assert_eq!(
            redirect.to_string(),
            "it answered 302 Found sending us to https://sso.example/login, not the Kubernetes API"
        );
    }
}
