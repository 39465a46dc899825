//! The error every command returns: what we were doing, the cause chain, a hint, an exit code.

use std::fmt;

/// Boxed cause kept as an error's source.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Process exit codes; documented in docs/reference.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Anything that went wrong that has no more specific code.
    Failure = 1,
    /// The command line was wrong (clap uses 2 too).
    Usage = 2,
    /// The cluster (kubeconfig or API server) could not be read, or refused a write.
    Cluster = 3,
    /// The image input (archive, engine) could not be read or is invalid.
    Input = 4,
    /// The registry refused, failed or could not be reached.
    Registry = 5,
    /// No way into the cluster: nothing advertised (for the network we push from) and no node
    /// loader, or the loader failed.
    Load = 6,
    /// Stopped by SIGINT (Ctrl-C): 128 + 2, as shells report it.
    Interrupted = 130,
    /// Stopped by SIGTERM: 128 + 15.
    Terminated = 143,
}

/// An error with context: `message` says what we were doing and to what.
#[derive(Debug)]
pub struct Error {
    message: String,
    source: Option<Cause>,
    hints: Vec<String>,
    exit: ExitCode,
    /// Nothing to say: the exit code says it all (Ctrl-C while `push --watch` waits).
    quiet: bool,
}

impl Error {
    pub fn new(exit: ExitCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
            hints: Vec::new(),
            exit,
            quiet: false,
        }
    }

    /// An error printed as nothing: the exit code says it all.
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    pub fn with_source(mut self, source: impl Into<Cause>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Adds a hint: one thing the user can do about it, shown on its own `hint:` line.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// Every hint in the chain, outermost first.
    pub fn hints(&self) -> Vec<&str> {
        let mut hints: Vec<&str> = self.hints.iter().map(String::as_str).collect();
        let mut next = std::error::Error::source(self);
        while let Some(err) = next {
            if let Some(inner) = err.downcast_ref::<Error>() {
                hints.extend(inner.hints.iter().map(String::as_str));
            }
            next = err.source();
        }
        hints
    }

    pub fn exit_code(&self) -> ExitCode {
        self.exit
    }

    /// The message and its cause chain on one line: `pushing layer: connection refused`.
    pub fn with_causes(&self) -> String {
        std::iter::once(self.message.clone())
            .chain(self.causes())
            .collect::<Vec<_>>()
            .join(": ")
    }

    /// The cause chain, outermost first, as display strings.
    pub fn causes(&self) -> Vec<String> {
        let mut causes = Vec::new();
        let mut next: Option<&(dyn std::error::Error + 'static)> = self
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static));
        while let Some(err) = next {
            let text = err.to_string();
            if causes.last() != Some(&text) {
                causes.push(text);
            }
            next = err.source();
        }
        causes
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Wraps any error with what we were doing: `result.context(ExitCode::Input, || format!(..))`.
pub trait Context<T> {
    fn context<M: Into<String>>(self, exit: ExitCode, message: impl FnOnce() -> M) -> Result<T>;
}

impl<T, E: Into<Cause>> Context<T> for std::result::Result<T, E> {
    fn context<M: Into<String>>(self, exit: ExitCode, message: impl FnOnce() -> M) -> Result<T> {
        self.map_err(|e| Error::new(exit, message()).with_source(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_walk_the_chain_and_drop_repeats() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let inner = Error::new(ExitCode::Registry, "connecting to 127.0.0.1:5000").with_source(io);
        let outer = Error::new(ExitCode::Registry, "pushing layer").with_source(inner);
        assert_eq!(
            outer.causes(),
            vec!["connecting to 127.0.0.1:5000", "connection refused"]
        );
    }

    #[test]
    fn hints_are_collected_from_the_whole_chain() {
        let inner = Error::new(ExitCode::Registry, "inner").with_hint("see the guide");
        let outer = Error::new(ExitCode::Registry, "outer")
            .with_hint("first")
            .with_hint("second")
            .with_source(inner);
        assert_eq!(outer.hints(), vec!["first", "second", "see the guide"]);
    }
}
