//! Which local engine: docker, podman or nerdctl, named once and checked where the name is read.

use std::fmt;

use crate::plumbing::error::{Error, ExitCode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Docker,
    Podman,
    Nerdctl,
}

impl Engine {
    /// The order engines are asked for a named image, unless one is preferred.
    pub const ALL: [Self; 3] = [Self::Docker, Self::Podman, Self::Nerdctl];

    /// Its CLI's program name, which is also how users name it.
    pub const fn program(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Podman => "podman",
            Self::Nerdctl => "nerdctl",
        }
    }

    /// `KUBECTL_REGISTRY_ENGINE`'s value; anything but a known engine is a usage error, never a
    /// program to run.
    pub fn from_setting(variable: &str, value: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|engine| engine.program() == value)
            .ok_or_else(|| {
                Error::new(
                    ExitCode::Usage,
                    format!(
                        "{variable}={value:?} is not valid: expected docker, podman or nerdctl"
                    ),
                )
                .with_hint(format!("fix or unset {variable}"))
            })
    }

    /// Every engine, `preferred` first.
    pub fn in_order(preferred: Option<Self>) -> impl Iterator<Item = Self> {
        preferred
            .into_iter()
            .chain(Self::ALL.into_iter().filter(move |e| Some(*e) != preferred))
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.program())
    }
}

#[cfg(test)]
mod tests {
    use super::Engine;

    #[test]
    fn the_preferred_engine_is_asked_first_and_the_rest_in_order() {
        let order: Vec<Engine> = Engine::in_order(Some(Engine::Podman)).collect();
        assert_eq!(order, [Engine::Podman, Engine::Docker, Engine::Nerdctl]);
        let order: Vec<Engine> = Engine::in_order(None).collect();
        assert_eq!(order, Engine::ALL);
    }

    #[test]
    fn an_unknown_engine_is_a_usage_error_naming_the_variable() {
        let err = Engine::from_setting("KUBECTL_REGISTRY_ENGINE", "rm -rf").unwrap_err();
        assert_eq!(err.exit_code(), crate::plumbing::error::ExitCode::Usage);
        assert!(
            err.to_string()
                .contains(r#"KUBECTL_REGISTRY_ENGINE="rm -rf" is not valid"#)
        );
        assert_eq!(
            Engine::from_setting("KUBECTL_REGISTRY_ENGINE", "nerdctl").unwrap(),
            Engine::Nerdctl
        );
    }
}
