//! Targets for what the cluster and its tools hand us: the KEP-1755 ConfigMap and the older
//! node annotations, kubeconfig files and exec credential plugins' answers, and the API
//! server's port-forward frames.

use std::collections::BTreeMap;
use std::io::Write;

use crate::cluster::exec_plugin::parse_answer;
use crate::cluster::hosting::{
    Advertisement, HelpUrl, registry_from_configmap, registry_from_node_annotations,
};
use crate::cluster::kubeconfig::read_and_select;
use crate::cluster::tunnel::{Frame, Reader, kubelet_words};

/// The hosting ConfigMap as `info` and `push` read it. The first byte chooses what the rest is:
/// the value of `localRegistryHosting.v1` alone; the ConfigMap's whole data (key, value, key,
/// value... separated by NULs); or a node's annotations the same way. A registry read is
/// advertised again as `advertise` writes it, and must read back the same; an error quotes what
/// came from outside shortened.
pub fn hosting(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some(fields) = super::fields(rest, usize::MAX) else {
        return;
    };
    let pairs = |fields: &[&str]| -> BTreeMap<String, String> {
        fields
            .chunks(2)
            .map(|pair| {
                (
                    pair[0].to_string(),
                    pair.get(1).copied().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let mut notes = Vec::new();
    match mode % 3 {
        0 => {
            let data = BTreeMap::from([("localRegistryHosting.v1".to_string(), fields.join("\0"))]);
            configmap_reads_back(&data, &mut notes);
        }
        1 => configmap_reads_back(&pairs(&fields), &mut notes),
        _ => {
            if let Err(err) = registry_from_node_annotations("node-1", &pairs(&fields), &mut notes)
            {
                super::assert_bounded(&err);
            }
        }
    }
}

fn configmap_reads_back(
    data: &BTreeMap<String, String>,
    notes: &mut Vec<crate::cluster::hosting::Note>,
) {
    let read = match registry_from_configmap(data, notes) {
        Ok(read) => read,
        Err(err) => {
            super::assert_bounded(&err);
            return;
        }
    };
    let Some(registry) = read.registry else {
        return;
    };
    if !registry.host_advertised {
        return;
    }
    let advertised = Advertisement {
        host: registry.host.clone(),
        host_from_container_runtime: Some(registry.host_from_container_runtime.clone()),
        host_from_cluster_network: registry.host_from_cluster_network.clone(),
        help: registry
            .help
            .as_deref()
            .and_then(|help| HelpUrl::parse(help).ok()),
    };
    let written = BTreeMap::from([(
        crate::cluster::hosting::hosting_v1_key(),
        advertised.v1_value(),
    )]);
    let again = match registry_from_configmap(&written, &mut Vec::new()) {
        Ok(again) => again,
        Err(err) => panic!("what advertise writes does not read back: {err}\n{written:?}"),
    };
    let Some(again) = again.registry else {
        panic!("what advertise writes advertises no registry: {written:?}");
    };
    assert_eq!(again.host, registry.host);
    assert_eq!(
        again.host_from_container_runtime,
        registry.host_from_container_runtime
    );
    assert_eq!(
        again.host_from_cluster_network,
        registry.host_from_cluster_network
    );
    assert_eq!(
        again.help,
        advertised.help.map(|help| help.as_str().to_string())
    );
}

/// A kubeconfig file as `--kubeconfig FILE` reads it, its current context chosen; then an exec
/// credential plugin's answer (after the first NUL), JSON or YAML as client-go reads it.
pub fn kubeconfig(data: &[u8]) {
    let mut parts = data.splitn(2, |&b| b == 0);
    let config = parts.next().unwrap_or_default();
    let answer = parts.next().unwrap_or_default();
    if let Ok(mut file) = tempfile::NamedTempFile::new()
        && file.write_all(config).is_ok()
        && file.flush().is_ok()
        && let Ok(selected) = read_and_select(file.path())
    {
        let _ = (selected.facts.server, selected.context);
    }
    let _ = parse_answer(answer);
}

/// The API server's port-forward messages for one port, as the tunnel's bridge reads them: the
/// first two bytes are the port asked for, then messages, each two bytes of length
/// (little-endian) and its bytes.
/// Each channel opens once, with its port, before it carries anything; a data or error frame
/// is the message past its channel byte; the kubelet's words are kept short.
pub fn portforward_frames(data: &[u8]) {
    let Some((port, mut rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let port = u16::from_le_bytes(*port);
    let mut reader = Reader::new(port);
    let mut opened = [false; 2];
    while let Some((len, after)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_le_bytes(*len));
        let (message, next) = after.split_at(after.len().min(len));
        rest = next;
        match reader.read(message) {
            Ok(Frame::Opened) => {
                let channel = usize::from(message[0]);
                assert!(!opened[channel], "channel {channel} opened twice");
                assert_eq!(message[1..], port.to_le_bytes());
                opened[channel] = true;
            }
            Ok(Frame::Data(bytes)) => {
                assert!(opened[0], "data before the data channel opened");
                assert_eq!(bytes, &message[1..]);
            }
            Ok(Frame::Error(text)) => {
                assert!(opened[1], "an error before the error channel opened");
                assert_eq!(text, &message[1..]);
                assert!(kubelet_words(text).len() <= super::ERROR_TEXT_LIMIT);
            }
            Err(broke) => assert!(broke.to_string().len() < 200, "{broke}"),
        }
    }
}
