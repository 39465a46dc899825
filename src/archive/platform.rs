//! Image platforms (`os/arch[/variant]`): parsing the flag, reading configs, matching.

use std::fmt;
use std::str::FromStr;

use super::error::ArchiveError;

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

    /// Whether an image of this platform is what `wanted` asks for. A wanted platform without a
    /// variant takes any variant; arm64's variant defaults to v8, as containerd normalises it.
    pub fn satisfies(&self, wanted: &Platform) -> bool {
        if self.os != wanted.os || self.architecture != wanted.architecture {
            return false;
        }
        match (&wanted.variant, self.normalised_variant()) {
            (None, _) => true,
            (Some(wanted_variant), Some(variant)) => *wanted_variant == variant,
            (Some(_), None) => false,
        }
    }

    fn normalised_variant(&self) -> Option<String> {
        match (&self.variant, self.architecture.as_str()) {
            (Some(variant), _) => Some(variant.clone()),
            (None, "arm64") => Some("v8".to_string()),
            (None, _) => None,
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

impl FromStr for Platform {
    type Err = ArchiveError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = text.split('/').collect();
        let valid = (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty());
        if !valid {
            return Err(ArchiveError::BadPlatform(text.to_string()));
        }
        Ok(Self {
            os: parts[0].to_ascii_lowercase(),
            architecture: parts[1].to_ascii_lowercase(),
            variant: parts.get(2).map(|v| v.to_ascii_lowercase()),
        })
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
}
