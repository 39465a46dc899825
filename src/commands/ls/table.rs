//! `ls` as a table: one row per tag (per node and content tag without a registry), columns
//! padded to their widest cell, digests shortened to 12 hex digits; what belongs to a tag's
//! manifest (signatures, attestations, referrers) on lines of its own under it, `└ KIND TAG`.

use super::Row;
use super::rows::AttachmentRow;
use crate::plumbing::output::human_size;

/// The table for `rows`; `nodes`: the node-content-tag shape.
pub(crate) fn render(rows: &[Row], nodes: bool) -> String {
    let mut lines: Vec<Vec<String>> = Vec::new();
    let header: &[&str] = if nodes {
        &[
            "NODE",
            "REPOSITORY",
            "TAG",
            "DIGEST",
            "CREATED",
            "IN USE BY",
        ]
    } else {
        &[
            "REPOSITORY",
            "TAG",
            "DIGEST",
            "SIZE",
            "CREATED",
            "IN USE BY",
        ]
    };
    lines.push(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        let mut cells = Vec::new();
        if nodes {
            cells.push(row.node.clone().unwrap_or_default());
        }
        cells.push(row.repository.clone());
        cells.push(match (&row.kind, &row.attached_to) {
            (Some(kind), Some(subject)) => format!(
                "{} ({kind} of {}, which no tag names)",
                short_tag(&row.tag),
                short_digest(subject)
            ),
            _ => row.tag.clone(),
        });
        cells.push(short_digest(&row.digest));
        if !nodes {
            cells.push(row.size.map(human_size).unwrap_or_else(|| "-".to_string()));
        }
        cells.push(row.created.clone().unwrap_or_else(|| "-".to_string()));
        cells.push(match &row.in_use_by {
            None => "?".to_string(),
            Some(users) if users.is_empty() => "-".to_string(),
            Some(users) => users.join(","),
        });
        lines.push(cells);
        lines.extend(row.attachments.iter().flatten().map(attachment_cells));
    }
    let columns = header.len();
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    lines
        .iter()
        .map(|cells| {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 == columns {
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 3));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `sha256:0123456789ab`.
fn short_digest(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algorithm, hex)) if hex.len() > 12 => format!("{algorithm}:{}", &hex[..12]),
        _ => digest.to_string(),
    }
}

/// `└ KIND TAG` under its subject's row: what belongs to the row's manifest.
fn attachment_cells(attachment: &AttachmentRow) -> Vec<String> {
    let tag = attachment
        .tag
        .as_deref()
        .map_or_else(|| "(in the index)".to_string(), short_tag);
    let size = if attachment.tag.is_some() {
        human_size(attachment.size)
    } else {
        "-".to_string()
    };
    vec![
        String::new(),
        format!("└ {} {tag}", attachment.kind),
        short_digest(&attachment.digest),
        size,
        "-".to_string(),
        "-".to_string(),
    ]
}

/// `sha256-0123456789ab….sig`: a tag named after a digest, shortened as digests are.
fn short_tag(tag: &str) -> String {
    match tag.strip_prefix("sha256-") {
        Some(rest) if rest.len() > 12 => {
            let suffix = rest.find('.').map_or("", |at| &rest[at..]);
            format!("sha256-{}…{suffix}", &rest[..12])
        }
        _ => tag.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_users_are_named() {
        let rows = [Row {
            node: None,
            repository: "app".to_string(),
            tag: "v1".to_string(),
            digest: format!("sha256:{}", "a".repeat(64)),
            size: Some(1_234_567),
            created: Some("2024-05-01T12:00:00Z".to_string()),
            in_use_by: Some(vec!["Deployment/default/web".to_string()]),
            attachments: Some(vec![super::super::rows::AttachmentRow {
                tag: Some(format!("sha256-{}.sig", "a".repeat(64))),
                digest: format!("sha256:{}", "b".repeat(64)),
                kind: "cosign signature".to_string(),
                size: 640,
            }]),
            attached_to: None,
            kind: None,
        }];
        assert_eq!(
            render(&rows, false),
            "REPOSITORY   TAG                                           DIGEST                SIZE     CREATED                IN USE BY\n\
             app          v1                                            sha256:aaaaaaaaaaaa   1.2 MB   2024-05-01T12:00:00Z   Deployment/default/web\n\
             \x20            └ cosign signature sha256-aaaaaaaaaaaa….sig   sha256:bbbbbbbbbbbb   640 B    -                      -"
        );
    }
}
