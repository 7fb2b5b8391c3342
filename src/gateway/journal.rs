//! The decisions journal: one record per decision, each carrying the SHA-256 of the record before
//! it, so changing, removing or reordering any record breaks every hash after it. The chain lives in
//! the store ([`super::store::Store::append`]); this module computes and checks the hashes.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the first record points back to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A journal row as stored: the text that was hashed, so verification sees exactly what is there.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRow {
    pub seq: i64,
    pub at: String,
    pub kind: String,
    pub actor: String,
    pub item: Option<String>,
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// The hash of a record: every stored field, the previous hash included, one per line.
pub fn hash(
    seq: i64,
    prev_hash: &str,
    at: &str,
    kind: &str,
    actor: &str,
    item: Option<&str>,
    detail: &str,
) -> String {
    let text = format!(
        "{seq}\n{prev_hash}\n{at}\n{kind}\n{actor}\n{}\n{detail}",
        item.unwrap_or("")
    );
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The first record that does not hold, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub seq: i64,
    pub reason: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "journal broken at record {}: {}", self.seq, self.reason)
    }
}

/// Checks the chain from its start; the rows must be every record, oldest first. Returns how many.
pub fn verify(rows: &[JournalRow]) -> Result<usize, Broken> {
    let mut prev = GENESIS.to_string();
    for (expected_seq, r) in (1..).zip(rows) {
        let broken = |reason: String| Broken { seq: r.seq, reason };
        if r.seq != expected_seq {
            return Err(broken(format!(
                "record {expected_seq} is missing (the next one stored is {})",
                r.seq
            )));
        }
        if r.prev_hash != prev {
            return Err(broken(
                "it does not point to the record before it (a record was removed or rewritten)"
                    .into(),
            ));
        }
        let h = hash(
            r.seq,
            &r.prev_hash,
            &r.at,
            &r.kind,
            &r.actor,
            r.item.as_deref(),
            &r.detail,
        );
        if h != r.hash {
            return Err(broken(
                "its content does not match its hash (it was changed after it was written)".into(),
            ));
        }
        prev = r.hash.clone();
    }
    Ok(rows.len())
}

pub fn row_json(r: &JournalRow) -> Value {
    json!({
        "seq": r.seq,
        "at": r.at,
        "kind": r.kind,
        "actor": r.actor,
        "item": r.item,
        "detail": serde_json::from_str::<Value>(&r.detail).unwrap_or(Value::String(r.detail.clone())),
        "prevHash": r.prev_hash,
        "hash": r.hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<JournalRow> {
        let mut prev = GENESIS.to_string();
        (1..=n)
            .map(|seq| {
                let at = format!("2026-06-01T12:00:0{seq}.000000Z");
                let detail = format!("{{\"n\":{seq}}}");
                let h = hash(seq, &prev, &at, "approve", "alice", Some("gi_1"), &detail);
                let row = JournalRow {
                    seq,
                    at,
                    kind: "approve".into(),
                    actor: "alice".into(),
                    item: Some("gi_1".into()),
                    detail,
                    prev_hash: prev.clone(),
                    hash: h.clone(),
                };
                prev = h;
                row
            })
            .collect()
    }

    #[test]
    fn a_chain_holds_until_a_record_is_changed_removed_or_rehashed_alone() {
        let rows = chain(4);
        assert_eq!(verify(&rows), Ok(4));
        assert_eq!(verify(&[]), Ok(0));

        let mut changed = rows.clone();
        changed[1].actor = "mallory".into();
        assert_eq!(verify(&changed).unwrap_err().seq, 2);

        let mut removed = rows.clone();
        removed.remove(2);
        assert_eq!(verify(&removed).unwrap_err().seq, 4);

        // Rewriting a record and recomputing its own hash still breaks the next one.
        let mut rehashed = rows.clone();
        rehashed[1].detail = "{\"n\":99}".into();
        let r = &rehashed[1];
        rehashed[1].hash = hash(
            r.seq,
            &r.prev_hash,
            &r.at,
            &r.kind,
            &r.actor,
            r.item.as_deref(),
            &r.detail,
        );
        let broken = verify(&rehashed).unwrap_err();
        assert_eq!(broken.seq, 3);
        assert!(broken.reason.contains("does not point"), "{broken}");
    }
}
