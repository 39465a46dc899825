//! The system's CA certificates, read once per process and shared by every TLS client of ours
//! (the registry's, kube's). Reading them means parsing a few hundred PEM certificates, some
//! 10-15 ms each time; reqwest's and kube's own verifiers would each read them again, on the
//! critical path of every push.

use std::collections::HashSet;
use std::sync::OnceLock;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;

/// Where rustls' platform verifier itself reads the system's roots from files (Linux, the BSDs):
/// there, the same roots read once are the same trust. Elsewhere the operating system's own
/// verifier decides (macOS, Windows), and we leave it to it.
const READ_FROM_FILES: bool = cfg!(all(
    unix,
    not(target_vendor = "apple"),
    not(target_os = "android")
));

static SYSTEM_ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();

/// Starts reading the roots on a thread of its own, so that the first client to need them finds
/// them read (a push asks its engine and its cluster meanwhile).
pub fn read_ahead() {
    if READ_FROM_FILES {
        std::thread::spawn(read);
    }
}

/// The system's roots that are usable trust anchors, each once (a CA bundle file and a hashed
/// directory hold the same ones); `None` where the operating system's verifier is to be used.
/// Empty when the system has none (a slim container without ca-certificates).
pub fn system_roots() -> Option<&'static [CertificateDer<'static>]> {
    READ_FROM_FILES.then(|| read().as_slice())
}

fn read() -> &'static Vec<CertificateDer<'static>> {
    SYSTEM_ROOTS.get_or_init(|| {
        let mut seen = HashSet::new();
        rustls_native_certs::load_native_certs()
            .certs
            .into_iter()
            .filter(|der| seen.insert(der.as_ref().to_vec()))
            // As rustls' platform verifier does: a root that does not parse is left out, not fatal.
            .filter(|der| RootCertStore::empty().add(der.clone()).is_ok())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roots_are_read_once_and_each_is_a_trust_anchor() {
        let Some(first) = system_roots() else {
            return;
        };
        let again = system_roots().expect("read from files here");
        assert!(std::ptr::eq(first, again));
        let mut store = RootCertStore::empty();
        let (added, ignored) = store.add_parsable_certificates(first.iter().cloned());
        assert_eq!((added, ignored), (first.len(), 0));
        let distinct: HashSet<&[u8]> = first.iter().map(|der| der.as_ref()).collect();
        assert_eq!(distinct.len(), first.len());
    }
}
