//! The decisions journal: one record per decision, each carrying the SHA-256 of the record before
//! it, so changing, removing or reordering any record breaks every hash after it. The chain lives in
//! the store ([`super::store::Store::append`]); this module computes and checks the hashes.

#[cfg(test)]
use serde_json::Value;
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

/// Marks a record hashed with [`hash`] (chain version 2). A record without it was written by an
/// older gateway with [`hash_v1`]; once a chain has a version-2 record, every later one is.
pub const V2: &str = "v2:";

/// The hash of a record (chain version 2): every stored field, the previous hash included, as
/// one JSON array, so no two different records can hash the same (an `actor` with a newline in
/// it, an empty `item` and a missing one, are different arrays).
pub fn hash(
    seq: i64,
    prev_hash: &str,
    at: &str,
    kind: &str,
    actor: &str,
    item: Option<&str>,
    detail: &str,
) -> String {
    // A tuple is written as the JSON array `[seq, prevHash, at, kind, actor, item, detail]`.
    let text = serde_json::to_string(&(seq, prev_hash, at, kind, actor, item, detail))
        .expect("strings and numbers always serialise");
    format!("{V2}{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// The hash of chain version 1: the fields one per line. Kept to verify journals written before
/// version 2; never written any more.
pub fn hash_v1(
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
        let v2 = r.hash.starts_with(V2);
        if !v2 && prev.starts_with(V2) {
            return Err(broken(
                "it is hashed the old way after a record hashed the new way (rewritten)".into(),
            ));
        }
        let h = if v2 { hash } else { hash_v1 }(
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

/// A journal row as the supervisor API shows it: the detail as the JSON it was stored as.
/// The journal's row as the API answered it before its answers were typed: kept as the test
/// oracle that the typed answer (`http::api`'s `record`) writes the same JSON.
#[cfg(test)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    seq: i64,
    at: &'a str,
    kind: &'a str,
    actor: &'a str,
    item: Option<&'a str>,
    detail: Value,
    prev_hash: &'a str,
    hash: &'a str,
}

#[cfg(test)]
pub fn row_json(r: &JournalRow) -> Value {
    let shown = Shown {
        seq: r.seq,
        at: &r.at,
        kind: &r.kind,
        actor: &r.actor,
        item: r.item.as_deref(),
        detail: serde_json::from_str::<Value>(&r.detail).unwrap_or(Value::String(r.detail.clone())),
        prev_hash: &r.prev_hash,
        hash: &r.hash,
    };
    serde_json::to_value(shown).expect("a journal row always serialises")
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
    fn two_different_records_never_hash_the_same_and_old_chains_still_verify() {
        // Fields joined by newlines: an actor with a newline in it reads as the next field.
        let a = hash_v1(1, GENESIS, "t", "approve", "alice\nx", None, "{}");
        let b = hash_v1(1, GENESIS, "t", "approve", "alice", Some("x"), "\n{}");
        assert_eq!(a, b, "the collision version 2 removes");
        let a = hash(1, GENESIS, "t", "approve", "alice\nx", None, "{}");
        let b = hash(1, GENESIS, "t", "approve", "alice", Some("x"), "\n{}");
        assert_ne!(a, b);
        assert_ne!(
            hash(1, GENESIS, "t", "k", "a", None, "{}"),
            hash(1, GENESIS, "t", "k", "a", Some(""), "{}")
        );
        // A journal written before version 2, then continued: both verify.
        let mut rows = chain(2);
        for r in &mut rows {
            r.hash = hash_v1(
                r.seq,
                &r.prev_hash,
                &r.at,
                &r.kind,
                &r.actor,
                r.item.as_deref(),
                &r.detail,
            );
        }
        rows[1].prev_hash = rows[0].hash.clone();
        rows[1].hash = hash_v1(
            2,
            &rows[0].hash,
            &rows[1].at,
            "approve",
            "alice",
            Some("gi_1"),
            &rows[1].detail,
        );
        let third = JournalRow {
            seq: 3,
            at: "2026-06-01T12:00:03.000000Z".into(),
            kind: "approve".into(),
            actor: "alice".into(),
            item: None,
            detail: "{}".into(),
            prev_hash: rows[1].hash.clone(),
            hash: hash(
                3,
                &rows[1].hash,
                "2026-06-01T12:00:03.000000Z",
                "approve",
                "alice",
                None,
                "{}",
            ),
        };
        rows.push(third);
        assert_eq!(verify(&rows), Ok(3));
        // No going back to the old encoding after the new one.
        let mut back = rows.clone();
        let fourth_v1 = hash_v1(4, &back[2].hash, "t", "k", "a", None, "{}");
        back.push(JournalRow {
            seq: 4,
            at: "t".into(),
            kind: "k".into(),
            actor: "a".into(),
            item: None,
            detail: "{}".into(),
            prev_hash: back[2].hash.clone(),
            hash: fourth_v1,
        });
        assert_eq!(verify(&back).unwrap_err().seq, 4);
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
