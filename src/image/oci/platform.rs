//! Image platforms (`os/arch[/variant]`): parsing the flag, reading configs, matching with the
//! aliases containerd normalises (`aarch64`, `x86_64`, `armhf`, `arm64/v8`).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Platform {
    /// A platform from possibly missing fields; unknown parts read `unknown`, as buildx writes.
    pub(crate) fn from_parts(
        os: Option<&str>,
        architecture: Option<&str>,
        variant: Option<&str>,
    ) -> Self {
        let known = |part: Option<&str>| match part {
            Some(part) if !part.is_empty() => part.to_string(),
            _ => "unknown".to_string(),
        };
        Self {
            os: known(os),
            architecture: known(architecture),
            variant: variant.filter(|v| !v.is_empty()).map(str::to_string),
        }
    }

    /// The platform this binary runs on as images name it (Go's names): what a node-load picks
    /// when the nodes do not say theirs, and what doctor's probe image declares.
    pub fn host() -> Self {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            other => other,
        };
        Self {
            os: "linux".to_string(),
            architecture: architecture.to_string(),
            variant: None,
        }
    }

    /// Whether an image of this platform is what `wanted` asks for, both normalised as
    /// containerd does. A wanted platform without a variant takes any variant.
    pub fn satisfies(&self, wanted: &Platform) -> bool {
        let (have, wanted) = (self.normalised(), wanted.normalised());
        if have.os != wanted.os || have.architecture != wanted.architecture {
            return false;
        }
        match &wanted.variant {
            None => true,
            Some(variant) => have.variant.as_ref() == Some(variant),
        }
    }

    /// containerd's names: `aarch64` is `arm64` (whose `v8` is its only variant, so dropped),
    /// `x86_64` is `amd64`, `i386` is `386`, `armhf` is `arm/v7`, `armel` is `arm/v6`, and a
    /// bare-number arm variant gets its `v`.
    fn normalised(&self) -> Platform {
        let variant = self.variant.as_deref();
        let (architecture, variant) = match (self.architecture.as_str(), variant) {
            ("aarch64" | "arm64", Some("8" | "v8" | "v8.0") | None) => ("arm64", None),
            ("aarch64" | "arm64", variant) => ("arm64", variant.map(str::to_string)),
            ("x86_64" | "x86-64" | "amd64", variant) => ("amd64", variant.map(str::to_string)),
            ("i386" | "386", variant) => ("386", variant.map(str::to_string)),
            ("armhf", _) => ("arm", Some("v7".to_string())),
            ("armel", _) => ("arm", Some("v6".to_string())),
            ("arm", Some(number @ ("5" | "6" | "7" | "8"))) => ("arm", Some(format!("v{number}"))),
            (architecture, variant) => (architecture, variant.map(str::to_string)),
        };
        Platform {
            os: self.os.clone(),
            architecture: architecture.to_string(),
            variant,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}

/// Text that is not `OS/ARCH[/VARIANT]`.
#[derive(Debug, thiserror::Error)]
#[error("{} is not a platform; expected OS/ARCH[/VARIANT], e.g. linux/amd64", crate::plumbing::output::shown(.0))]
pub struct BadPlatform(pub String);

impl FromStr for Platform {
    type Err = BadPlatform;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = text.split('/').collect();
        let valid = (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty());
        if !valid {
            return Err(BadPlatform(text.to_string()));
        }
        let given = Self {
            os: parts[0].to_ascii_lowercase(),
            architecture: parts[1].to_ascii_lowercase(),
            variant: parts.get(2).map(|v| v.to_ascii_lowercase()),
        };
        Ok(given.normalised())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform(text: &str) -> Platform {
        text.parse().unwrap()
    }

    #[test]
    fn parses_os_arch_and_optional_variant() {
        assert_eq!(platform("linux/arm/v7").to_string(), "linux/arm/v7");
        assert_eq!(platform("Linux/AMD64").to_string(), "linux/amd64");
        assert!("linux".parse::<Platform>().is_err());
        assert!("linux//v7".parse::<Platform>().is_err());
        assert!("a/b/c/d".parse::<Platform>().is_err());
    }

    #[test]
    fn a_wanted_platform_without_variant_takes_any_variant() {
        assert!(platform("linux/arm/v7").satisfies(&platform("linux/arm")));
        assert!(!platform("linux/arm/v6").satisfies(&platform("linux/arm/v7")));
        assert!(platform("linux/arm64").satisfies(&platform("linux/arm64/v8")));
        assert!(!platform("linux/amd64").satisfies(&platform("linux/arm64")));
    }

    #[test]
    fn containerds_aliases_name_the_same_platforms() {
        assert_eq!(platform("linux/aarch64").to_string(), "linux/arm64");
        assert_eq!(platform("linux/arm64/v8").to_string(), "linux/arm64");
        assert_eq!(platform("linux/x86_64").to_string(), "linux/amd64");
        assert_eq!(platform("linux/armhf").to_string(), "linux/arm/v7");
        let stored = |os, arch, variant| Platform::from_parts(Some(os), Some(arch), variant);
        assert!(stored("linux", "arm64", Some("v8")).satisfies(&platform("linux/aarch64")));
        assert!(stored("linux", "arm64", None).satisfies(&platform("linux/arm64/v8")));
        assert!(stored("linux", "amd64", None).satisfies(&platform("linux/x86_64")));
        assert!(stored("linux", "arm", Some("v7")).satisfies(&platform("linux/armhf")));
        assert!(stored("linux", "arm", Some("7")).satisfies(&platform("linux/arm/v7")));
        assert!(!stored("linux", "arm", Some("v6")).satisfies(&platform("linux/armhf")));
    }
}
