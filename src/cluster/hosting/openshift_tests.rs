//! Reading OpenShift's image config into a registry, and its repository rule.

use super::*;
use crate::image::reference::RegistryHost;

const INTERNAL: &str = "image-registry.openshift-image-registry.svc:5000";
const ROUTE: &str = "default-route-openshift-image-registry.apps-crc.testing";

fn read(internal: Option<&str>, external: &[&str]) -> Result<Option<LocalRegistry>, Error> {
    let external: Vec<String> = external.iter().map(|h| h.to_string()).collect();
    registry_from_openshift(internal, &external, &mut Vec::new())
}

use crate::plumbing::error::{Error, ExitCode};

#[test]
fn the_route_is_pushed_to_and_the_service_named_in_pod_specs() {
    let registry = read(Some(INTERNAL), &[ROUTE, "other.example"])
        .unwrap()
        .unwrap();
    assert_eq!(registry.host.as_str(), ROUTE);
    assert_eq!(registry.host_from_container_runtime.as_str(), INTERNAL);
    assert_eq!(
        registry
            .host_from_cluster_network
            .as_ref()
            .map(RegistryHost::as_str),
        Some(INTERNAL)
    );
    assert_eq!(registry.source, RegistrySource::Openshift);
    assert_eq!(registry.help.as_deref(), Some(OPENSHIFT_REGISTRY_GUIDE));
}

#[test]
fn without_a_route_only_the_service_is_known() {
    let registry = read(Some(INTERNAL), &[]).unwrap().unwrap();
    assert_eq!(registry.host.as_str(), INTERNAL);
    // From outside the cluster push tunnels to the Service.
    assert!(!registry.host_advertised);
    let service = registry.service.unwrap();
    assert_eq!(
        (
            service.namespace.as_str(),
            service.name.as_str(),
            service.port
        ),
        ("openshift-image-registry", "image-registry", Some(5000))
    );
    let routed = read(Some(INTERNAL), &[ROUTE]).unwrap().unwrap();
    assert!(routed.host_advertised && routed.service.is_none());
}

#[test]
fn without_an_internal_hostname_there_is_no_registry() {
    assert_eq!(read(None, &[ROUTE]).unwrap(), None);
}

#[test]
fn a_hostile_hostname_is_a_cluster_error_naming_the_field() {
    let err = read(Some(INTERNAL), &["https://x/y"]).unwrap_err();
    assert_eq!(
        err.message(),
        "images.config.openshift.io/cluster: status.externalRegistryHostnames is not a registry host"
    );
    assert_eq!(err.exit_code(), ExitCode::Cluster);
}

#[test]
fn repositories_are_the_namespace_and_the_last_component() {
    assert_eq!(
        openshift_repository("myproject", "myimg").unwrap(),
        "myproject/myimg"
    );
    assert_eq!(
        openshift_repository("dev", "gcr.io/proj/app").unwrap(),
        "dev/app"
    );
    for bad in ["", "My", "-a", "a_b", &"a".repeat(64)] {
        let err = openshift_repository(bad, "myimg").unwrap_err();
        assert_eq!(err.exit_code(), ExitCode::Usage, "{bad:?}");
    }
}
