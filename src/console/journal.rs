//! The decision journal, `decisions.jsonl` in the data directory: one JSON object per line, one
//! line per decision (approved, rejected, expired, failed).
//!
//! One writer: a dedicated thread owns the file and takes lines from a channel, so appends never
//! race each other (spawning a write per decision interleaved them). Each record goes out as a
//! single `write` of the object and its `\n` on a file opened for appending, then `sync_data`, so a
//! crash tears at most the last line. Several consoles on one data directory stay line-atomic too:
//! an `O_APPEND` write of a line this small is not split by the kernel.
//!
//! At start the last [`LOAD_LAST`] records come back into the Decisions pane. Reading is tolerant:
//! a torn last line (no `\n`: the process died mid-write) or a line that is not a decision is
//! skipped and counted, never fatal; the next append starts on a fresh line so the torn one does
//! not swallow it. Lower layer: imports only the inbox's data.

use super::inbox::{Decision, DecisionKind};
use chrono::{DateTime, Utc};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Decisions loaded into the Decisions pane at start: enough for a supervisor's day, few enough
/// that start-up reads only the file's tail.
pub const LOAD_LAST: usize = 200;

/// Sends records to the writer thread; cheap to clone, never blocks.
#[derive(Clone)]
pub struct JournalSender(mpsc::Sender<String>);

impl JournalSender {
    pub fn append(&self, line: String) {
        if self.0.send(line).is_err() {
            tracing::error!("the journal writer has stopped: a decision was not journaled");
        }
    }
}

/// The writer thread. [`Journal::finish`] waits for every record sent before it to be on disk.
pub struct Journal {
    tx: JournalSender,
    handle: JoinHandle<()>,
}

impl Journal {
    /// Starts the writer for `path` (its directory is created when the first record comes).
    pub fn start(path: PathBuf) -> Journal {
        let (tx, rx) = mpsc::channel::<String>();
        let handle = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || write_loop(&path, rx))
            .expect("spawning a thread");
        Journal {
            tx: JournalSender(tx),
            handle,
        }
    }

    pub fn sender(&self) -> JournalSender {
        self.tx.clone()
    }

    /// Closes this handle's channel and waits until the writer has written what every sender
    /// sent (the writer ends when the last sender is dropped).
    pub fn finish(self) {
        drop(self.tx);
        let _ = self.handle.join();
    }
}

fn write_loop(path: &Path, rx: mpsc::Receiver<String>) {
    let mut file: Option<File> = None;
    for line in rx {
        if file.is_none() {
            match open_for_append(path) {
                Ok(f) => file = Some(f),
                Err(e) => {
                    tracing::error!("cannot open the journal {}: {e}", path.display());
                    continue;
                }
            }
        }
        let Some(f) = file.as_mut() else { continue };
        if let Err(e) = write_record(f, &line) {
            tracing::error!("cannot append to the journal {}: {e}", path.display());
            // Reopened for the next record: the disk may come back.
            file = None;
        }
    }
}

/// Opens for appending; a torn last line (no `\n`) is ended first, so the next record starts a
/// line of its own.
fn open_for_append(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let len = f.metadata()?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1))?;
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            f.write_all(b"\n")?;
        }
    }
    Ok(f)
}

/// One record, one line, one `write`, then to disk.
fn write_record(f: &mut File, line: &str) -> std::io::Result<()> {
    // A record is serialized JSON, which has no raw newline; one that had would break the
    // one-object-per-line rule, so it is refused rather than written.
    let line = line.trim_end_matches('\n');
    if line.contains('\n') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a journal record spans lines",
        ));
    }
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    f.write_all(&buf)?;
    f.sync_data()
}

/// The history read back at start.
#[derive(Debug, Default)]
pub struct History {
    /// Newest first, at most the number asked for.
    pub decisions: Vec<Decision>,
    /// Lines among the last ones read that were torn or not a decision.
    pub skipped: usize,
}

impl History {
    /// What to tell the user about skipped lines, if any.
    pub fn warning(&self, path: &Path) -> Option<String> {
        (self.skipped > 0).then(|| {
            format!(
                "journal {}: skipped {} unreadable line(s)",
                path.display(),
                self.skipped
            )
        })
    }
}

/// The last `n` decisions of the journal at `path`; a missing file is an empty history.
pub fn load_last(path: &Path, n: usize) -> std::io::Result<History> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(History::default()),
        Err(e) => return Err(e),
    };
    let tail = read_tail(&mut f, n)?;
    Ok(parse_tail(&tail, n))
}

/// Enough of the file's end to hold its last `n` lines (plus a possibly torn one), read backwards
/// in blocks so a long journal costs only its tail.
fn read_tail(f: &mut File, n: usize) -> std::io::Result<Vec<u8>> {
    const BLOCK: u64 = 64 * 1024;
    let len = f.metadata()?.len();
    let mut start = len;
    let mut tail: Vec<u8> = Vec::new();
    while start > 0 {
        let from = start.saturating_sub(BLOCK);
        let mut block = vec![0u8; (start - from) as usize];
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(&mut block)?;
        block.extend_from_slice(&tail);
        tail = block;
        start = from;
        // n complete lines need n+1 newlines before them to be whole (the first may be cut).
        if tail.iter().filter(|b| **b == b'\n').count() > n {
            break;
        }
    }
    if start > 0 {
        // The first line may begin before what was read: drop it.
        let cut = tail.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        tail.drain(..cut);
    }
    Ok(tail)
}

fn parse_tail(tail: &[u8], n: usize) -> History {
    let mut history = History::default();
    let text = String::from_utf8_lossy(tail);
    let complete = text.ends_with('\n');
    let mut lines: Vec<&str> = text.split('\n').collect();
    // After the last '\n' split leaves "" (complete) or the torn record.
    let last = lines.pop().unwrap_or_default();
    if !complete && !last.trim().is_empty() {
        history.skipped += 1;
    }
    let lines: Vec<&str> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(n);
    for line in &lines[from..] {
        match decision_of(line) {
            Some(d) => history.decisions.push(d),
            None => history.skipped += 1,
        }
    }
    history.decisions.reverse();
    history
}

/// A journal record back into a decision; None when it is not one.
pub fn decision_of(line: &str) -> Option<Decision> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let kind = DecisionKind::from_label(&text("decision")?)?;
    let at = DateTime::parse_from_rfc3339(&text("time")?)
        .ok()?
        .with_timezone(&Utc);
    Some(Decision {
        proposal_id: text("proposalId")?,
        kind,
        at,
        summary: text("summary").unwrap_or_default(),
        result: text("result").unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn record(i: usize) -> String {
        let at = Utc.with_ymd_and_hms(2025, 3, 14, 12, 0, 0).unwrap()
            + chrono::Duration::seconds(i as i64);
        serde_json::json!({
            "time": at.to_rfc3339(),
            "proposalId": format!("prop_{i:04}"),
            "decision": "approved",
            "summary": format!("long 0.01 BTC 5x #{i}"),
            "result": "bought 0.01 BTC at 65000 (oid 1)",
            "preview": {"note": "x".repeat(i % 300)},
        })
        .to_string()
    }

    fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(name);
        (dir, path)
    }

    #[test]
    fn many_producers_one_writer_every_line_parses() {
        let (_dir, path) = temp_path("decisions.jsonl");
        let journal = Journal::start(path.clone());
        let producers: Vec<_> = (0..8)
            .map(|p| {
                let tx = journal.sender();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        tx.append(record(p * 100 + i));
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        journal.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        assert_eq!(lines.len(), 800);
        let mut ids = std::collections::BTreeSet::new();
        for line in lines {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            ids.insert(v["proposalId"].as_str().unwrap().to_string());
        }
        assert_eq!(ids.len(), 800, "every record once");
    }

    #[test]
    fn loads_the_last_n_newest_first() {
        let (_dir, path) = temp_path("decisions.jsonl");
        let journal = Journal::start(path.clone());
        let tx = journal.sender();
        // Large enough that the tail is read in more than one block.
        for i in 0..1000 {
            tx.append(record(i));
        }
        drop(tx);
        journal.finish();
        let h = load_last(&path, 200).unwrap();
        assert_eq!(h.skipped, 0);
        assert_eq!(h.decisions.len(), 200);
        assert_eq!(h.decisions[0].proposal_id, "prop_0999");
        assert_eq!(h.decisions[199].proposal_id, "prop_0800");
        assert_eq!(h.decisions[0].kind, DecisionKind::Approved);
        assert_eq!(h.decisions[0].summary, "long 0.01 BTC 5x #999");
        // Fewer lines than asked: all of them.
        let all = load_last(&path, 5000).unwrap();
        assert_eq!(all.decisions.len(), 1000);
        assert_eq!(all.decisions[999].proposal_id, "prop_0000");
    }

    #[test]
    fn every_decision_this_console_writes_reads_back() {
        for kind in DecisionKind::ALL {
            let line = serde_json::json!({"time": "2026-06-01T12:00:00Z", "proposalId": "p1",
                              "decision": kind.label(), "summary": "s", "result": "r"});
            let d = decision_of(&line.to_string())
                .unwrap_or_else(|| panic!("{} is reported unreadable", kind.label()));
            assert_eq!(d.kind, kind);
        }
    }

    #[test]
    fn a_missing_journal_is_an_empty_history() {
        let (_dir, path) = temp_path("none.jsonl");
        let h = load_last(&path, 200).unwrap();
        assert!(h.decisions.is_empty());
        assert_eq!(h.skipped, 0);
    }

    #[test]
    fn a_torn_last_line_and_bad_lines_are_skipped_and_counted() {
        let (_dir, path) = temp_path("decisions.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let torn = &record(3)[..40];
        let text = format!(
            "{}\nnot json\n\n{{\"decision\":\"maybe\"}}\n{}\n{torn}",
            record(1),
            record(2)
        );
        std::fs::write(&path, text).unwrap();
        let h = load_last(&path, 200).unwrap();
        let ids: Vec<_> = h.decisions.iter().map(|d| d.proposal_id.as_str()).collect();
        assert_eq!(ids, ["prop_0002", "prop_0001"]);
        assert_eq!(
            h.skipped, 3,
            "the bad line, the non-decision and the torn one"
        );
        assert!(h.warning(&path).unwrap().contains("skipped 3"));

        // The next append does not glue itself to the torn fragment.
        let journal = Journal::start(path.clone());
        journal.sender().append(record(4));
        journal.finish();
        let h = load_last(&path, 200).unwrap();
        assert_eq!(h.decisions[0].proposal_id, "prop_0004");
        assert_eq!(h.decisions.len(), 3);
        assert_eq!(
            h.skipped, 3,
            "the torn line is now a bad line, nothing more"
        );
    }
}
