//! The grammar and normalisation of image references.

use super::*;

fn normalized(text: &str) -> String {
    ImageName::parse(text).unwrap().normalized()
}

#[test]
fn normalises_like_docker() {
    assert_eq!(normalized("myimg"), "docker.io/library/myimg:latest");
    assert_eq!(normalized("myimg:dev"), "docker.io/library/myimg:dev");
    assert_eq!(normalized("user/app:1"), "docker.io/user/app:1");
    for alias in ["index.docker.io", "registry-1.docker.io", "docker.io"] {
        assert_eq!(
            normalized(&format!("{alias}/library/x:1")),
            "docker.io/library/x:1"
        );
        assert_eq!(
            normalized(&format!("{alias}/x")),
            "docker.io/library/x:latest"
        );
    }
    assert_eq!(
        normalized("localhost:5000/app"),
        "localhost:5000/app:latest"
    );
    assert_eq!(normalized("localhost/app:2"), "localhost/app:2");
    assert_eq!(normalized("gcr.io/p/app:v1"), "gcr.io/p/app:v1");
    let digest = format!("sha256:{}", "a".repeat(64));
    assert_eq!(
        normalized(&format!("app@{digest}")),
        format!("docker.io/library/app@{digest}")
    );
}

#[test]
fn familiar_form_drops_docker_hub_defaults() {
    let familiar = |t: &str| ImageName::parse(t).unwrap().familiar();
    assert_eq!(familiar("docker.io/library/myimg:dev"), "myimg:dev");
    assert_eq!(
        familiar("registry-1.docker.io/library/myimg:dev"),
        "myimg:dev"
    );
    assert_eq!(familiar("myimg"), "myimg:latest");
    assert_eq!(familiar("docker.io/user/app:1"), "user/app:1");
    assert_eq!(
        familiar("kind-registry:5000/app:dev"),
        "kind-registry:5000/app:dev"
    );
}

#[test]
fn familiar_repository_is_how_docker_prints_it() {
    let familiar = |raw| ImageName::parse(raw).unwrap().familiar_repository();
    assert_eq!(familiar("docker.io/library/myimg:dev"), "myimg");
    assert_eq!(familiar("someone/app"), "someone/app");
    assert_eq!(familiar("gcr.io/proj/app:v1"), "gcr.io/proj/app");
}

#[test]
fn same_image_compares_normalised_names() {
    assert!(same_image("myimg", "docker.io/library/myimg:latest"));
    assert!(same_image("myimg", "index.docker.io/library/myimg"));
    assert!(!same_image("myimg:dev", "myimg:latest"));
    assert!(!same_image("localhost/myimg:dev", "myimg:dev"));
}

#[test]
fn selection_uses_the_push_normalisation() {
    assert!(selects("localhost/myimg:dev", "myimg:dev"));
    assert!(selects("docker.io/library/myimg:dev", "myimg:dev"));
    assert!(selects(
        "registry-1.docker.io/library/myimg:latest",
        "myimg"
    ));
    assert!(!selects("gcr.io/p/myimg:dev", "myimg:dev"));
    assert!(!selects("myimg:dev", "myimg:other"));
}

#[test]
fn ref_name_with_slash_colon_or_at_is_a_reference() {
    assert!(ref_name_is_reference("gcr.io/p/app:v1"));
    assert!(ref_name_is_reference("app:v1"));
    assert!(!ref_name_is_reference("v1.2"));
}

#[test]
fn repository_names_cannot_escape_the_path() {
    for good in ["app", "team/app", "a.b_c-d/e", "a__b"] {
        assert!(check_repository(good).is_ok(), "{good}");
    }
    for bad in [
        "", "App", "a//b", "/a", "a/", "a?b", "a#b", "a b", "../x", "a/./b", "-a",
    ] {
        assert!(check_repository(bad).is_err(), "{bad}");
    }
}

#[test]
fn references_are_tags_or_digests() {
    assert!(check_tag_or_digest("dev").is_ok());
    assert!(check_tag_or_digest("_dev").is_ok());
    assert!(check_tag_or_digest("v1.2.3-rc_1").is_ok());
    assert!(check_tag_or_digest(&format!("sha256:{}", "0".repeat(64))).is_ok());
    for bad in ["", "-x", "a/b", "a?b", "a:b", &"x".repeat(129)] {
        assert!(check_tag_or_digest(bad).is_err(), "{bad}");
    }
}

#[test]
fn invalid_names_are_refused() {
    for bad in [
        "", "x/UPPER", "my img", "a//b", "app:-bad", "app:", "-lead", "a..b",
    ] {
        assert!(ImageName::parse(bad).is_err(), "{bad:?} should be refused");
    }
    for good in ["a", "a-b", "a--b", "a__b", "a.b/c_d", "my-app:1.0_rc-2"] {
        assert!(ImageName::parse(good).is_ok(), "{good:?} should parse");
    }
}

#[test]
fn a_name_in_the_wrong_case_is_corrected_keeping_its_registry_and_tag() {
    use super::corrected;
    assert_eq!(corrected("MyApp:V1").as_deref(), Some("myapp:V1"));
    assert_eq!(
        corrected("kind-registry:5000/Team/MyApp:Dev-1").as_deref(),
        Some("kind-registry:5000/team/myapp:Dev-1")
    );
    assert_eq!(corrected("MyOrg/App").as_deref(), Some("myorg/app"));
    assert_eq!(
        corrected(" http://localhost:5001/App:v1 ").as_deref(),
        Some("localhost:5001/app:v1")
    );
    assert_eq!(corrected("app:v1"), None, "nothing to correct");
    assert_eq!(
        corrected("app:bad+tag"),
        None,
        "a bad tag is kept, so no fix"
    );
}
