//! A stand-in token server for the real registry's `token` auth (no real one is packaged here):
//! checks Basic credentials or a refresh token, and mints RS256 JWTs that distribution verifies
//! against the certificate it is configured with. Signs with the openssl CLI.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;

pub(crate) const ISSUER: &str = "kubectl-registry-test-issuer";
pub(crate) const SERVICE: &str = "kubectl-registry-test";

/// Who may get a token.
#[derive(Debug, Clone)]
pub(crate) struct TokenAuth {
    pub user: String,
    pub password: String,
    /// Accepted as `refresh_token` in the OAuth2 POST (docker's identity token).
    pub refresh_token: String,
}

/// One token request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenRequest {
    pub method: String,
    pub scopes: Vec<String>,
    pub granted: bool,
}

pub(crate) struct TokenServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    seen: Arc<Mutex<Vec<TokenRequest>>>,
}

impl TokenServer {
    /// Makes the signing key and certificate in `dir` and starts serving `/token`.
    pub(crate) fn start(dir: &Path, auth: TokenAuth) -> Self {
        let key = dir.join("token.key");
        let cert = dir.join("token.crt");
        let output = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=token signer",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("running openssl");
        assert!(
            output.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let cert_der_b64 = pem_body(&std::fs::read_to_string(&cert).expect("token cert"));
        let listener = TcpListener::bind("127.0.0.1:0").expect("token server port");
        let port = listener.local_addr().expect("token server address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let signer = Signer {
            key,
            cert_der_b64,
            auth,
        };
        let thread = {
            let stop = stop.clone();
            let seen = seen.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        let _ = serve(stream, &signer, &seen);
                    }
                }
            })
        };
        Self {
            port,
            stop,
            thread: Some(thread),
            seen,
        }
    }

    pub(crate) fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }

    /// The certificate distribution trusts for tokens.
    pub(crate) fn certificate(dir: &Path) -> PathBuf {
        dir.join("token.crt")
    }

    pub(crate) fn requests(&self) -> Vec<TokenRequest> {
        self.seen.lock().expect("token log").clone()
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Signer {
    key: PathBuf,
    cert_der_b64: String,
    auth: TokenAuth,
}

fn serve(
    stream: TcpStream,
    signer: &Signer,
    seen: &Mutex<Vec<TokenRequest>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;

    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default();
    let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
    let (granted, scopes) = if method == "POST" {
        let form = parse_form(&String::from_utf8_lossy(&body));
        let scopes: Vec<String> = form
            .get("scope")
            .map(|s| s.split(' ').map(str::to_string).collect())
            .unwrap_or_default();
        let ok = form.get("grant_type").map(String::as_str) == Some("refresh_token")
            && form.get("refresh_token") == Some(&signer.auth.refresh_token);
        (ok, scopes)
    } else {
        let scopes = query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .filter(|(key, _)| *key == "scope")
            .map(|(_, value)| percent_decode(value))
            .collect();
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", signer.auth.user, signer.auth.password))
        );
        (headers.get("authorization") == Some(&expected), scopes)
    };
    seen.lock().expect("token log").push(TokenRequest {
        method,
        scopes: scopes.clone(),
        granted,
    });
    let (status, answer) = if granted {
        let token = signer.mint(&scopes);
        (
            "200 OK",
            format!(r#"{{"token":"{token}","access_token":"{token}","expires_in":300}}"#),
        )
    } else {
        (
            "401 Unauthorized",
            r#"{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}"#.to_string(),
        )
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    )
}

impl Signer {
    /// A JWT granting every requested `repository:<name>:<actions>` scope.
    fn mint(&self, scopes: &[String]) -> String {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let access: Vec<serde_json::Value> = scopes
            .iter()
            .filter_map(|scope| {
                let mut parts = scope.splitn(3, ':');
                let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                Some(serde_json::json!({"type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>()}))
            })
            .collect();
        let header = serde_json::json!({"typ": "JWT", "alg": "RS256", "x5c": [self.cert_der_b64]});
        let claims = serde_json::json!({
            "iss": ISSUER, "sub": self.auth.user, "aud": SERVICE,
            "exp": now + 300, "nbf": now - 10, "iat": now - 10, "jti": format!("{now}-{}", scopes.len()),
            "access": access,
        });
        let signing_input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let mut openssl = Command::new("openssl")
            .args(["dgst", "-sha256", "-sign"])
            .arg(&self.key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("running openssl dgst");
        openssl
            .stdin
            .take()
            .expect("openssl stdin")
            .write_all(signing_input.as_bytes())
            .expect("writing to openssl");
        let signed = openssl.wait_with_output().expect("openssl signature");
        assert!(signed.status.success(), "openssl dgst failed");
        format!("{signing_input}.{}", b64(&signed.stdout))
    }
}

/// The base64 between a PEM's BEGIN and END lines: the DER, as JWT's `x5c` wants it.
fn pem_body(pem: &str) -> String {
    pem.lines()
        .filter(|line| !line.starts_with("-----"))
        .collect()
}

fn parse_form(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(key, value)| (percent_decode(key), percent_decode(value)))
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}
