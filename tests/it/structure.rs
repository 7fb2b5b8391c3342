//! The layering rules of the code base, checked on the source itself so that they cannot rot:
//! the sandbox's domain never reaches into its HTTP layer, configuration never depends on the
//! console, an import cycle never spans folders, and no file grows past 1,000 lines of code.
//!
//! The module graph is read from `use` declarations and from `crate::`/`super::`/`self::` paths in
//! the code before a file's `#[cfg(test)]` module (tests may reach anywhere). A path resolves to
//! the deepest module that is a file (`a/b.rs` or `a/b/mod.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_CODE_LINES: usize = 1000;

struct SourceFile {
    /// Relative to `src/`, with `/` separators: `sandbox/http/mod.rs`.
    rel: String,
    /// The module path: `["sandbox", "http"]`.
    module: Vec<String>,
    /// The code before the first `#[cfg(test)]` module.
    code: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Index of the line that opens the file's test module, if any.
fn test_module_start(lines: &[&str]) -> Option<usize> {
    lines.iter().enumerate().find_map(|(i, l)| {
        let next = lines.get(i + 1).map(|n| n.trim_start()).unwrap_or("");
        (l.trim() == "#[cfg(test)]" && (next.starts_with("mod ") || next.starts_with("pub mod ")))
            .then_some(i)
    })
}

fn library_files() -> Vec<SourceFile> {
    let root = src_dir();
    let mut paths = Vec::new();
    collect(&root, &mut paths);
    let mut files: Vec<SourceFile> = paths
        .into_iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            // The binary is its own crate (main.rs and its commands in cmd/); it reaches the
            // library as `agentdesk::`.
            if rel == "main.rs" || rel.starts_with("cmd/") {
                return None;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let end = test_module_start(&lines).unwrap_or(lines.len());
            let code = lines[..end].join("\n");
            let mut module: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_string)
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            Some(SourceFile { rel, module, code })
        })
        .collect();
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// Removes comments and string literals, so paths in docs and messages are not read as imports.
fn strip(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident_before(b, i) {
            // Raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(b[i] as char);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&b'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as ':' (lifetimes have no closing quote there).
            out.push_str("' '");
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            let mut j = i + 2;
            while j < b.len() && b[j] != b'\'' {
                j += 1;
            }
            out.push_str("' '");
            i = j + 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    fn split_top(s: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        parts
    }
    fn go(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::");
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut p = prefix.to_vec();
            p.extend(segments(head));
            for part in split_top(inner) {
                go(&p, part, out);
            }
        } else {
            let path = tree.split(" as ").next().unwrap_or(tree);
            let mut p = prefix.to_vec();
            // `a::{self, b}` names `a` itself.
            if path.trim() != "self" {
                p.extend(segments(path));
            }
            out.push(p);
        }
    }
    let mut out = Vec::new();
    go(&[], tree, &mut out);
    out
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "*")
        .collect()
}

/// Every module path a file refers to, as written (`crate::`, `super::`, `self::`, or a child
/// module's name).
fn referenced_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths: Vec<Vec<String>> = use_trees(code).iter().flat_map(|t| expand_use(t)).collect();
    let stripped = strip(code);
    // Inline paths in expressions and types: `crate::a::b`, `super::x::y`, `self::m::f`, and
    // through a child module: `http::router(...)` in the file that declares `http`.
    for start in ["crate", "super", "self"]
        .into_iter()
        .map(str::to_string)
        .chain(child_modules(code))
    {
        paths.extend(paths_starting(&stripped, &start));
    }
    paths
}

/// The paths of (stripped) code that begin with `head::`, not counting those inside a longer
/// path (`a::head::x`).
fn paths_starting(code: &str, head: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let start = format!("{head}::");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = code[from..].find(&start) {
        let at = from + pos;
        from = at + start.len();
        if ident_before(bytes, at) || (at > 1 && &code[at - 2..at] == "::") {
            continue;
        }
        let end = code[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .map_or(code.len(), |e| at + e);
        out.push(segments(&code[at..end]));
    }
    out
}

/// The child modules a file declares (`mod x;`), which `use x::...` may name directly.
fn child_modules(code: &str) -> BTreeSet<String> {
    strip(code)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            rest.strip_suffix(';').map(|n| n.trim().to_string())
        })
        .collect()
}

/// Resolves a written path to an absolute module path, or None for an outside crate.
fn absolute(
    file: &SourceFile,
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String> = file.module.clone();
    let mut rest = path;
    match first.as_str() {
        "crate" => {
            base.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        name if children.contains(name) => {}
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// What a module re-exports with `pub use`: the name it is reached by → its absolute path.
type Reexports = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

fn reexports(files: &[SourceFile]) -> Reexports {
    files
        .iter()
        .map(|f| {
            let children = child_modules(&f.code);
            let stripped = strip(&f.code);
            let mut names = BTreeMap::new();
            for line in stripped.split(';') {
                let line = line.trim();
                let Some(tree) = line
                    .strip_prefix("pub use ")
                    .or_else(|| line.strip_prefix("pub(crate) use "))
                else {
                    continue;
                };
                let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
                for leaf in tree_leaves(&tree) {
                    if let Some(path) = absolute(f, &children, &leaf.0) {
                        names.insert(leaf.1, path);
                    }
                }
            }
            (f.module.clone(), names)
        })
        .collect()
}

/// The leaves of a `use` tree with the name each is bound to (`a::B as C` binds `C`).
fn tree_leaves(tree: &str) -> Vec<(Vec<String>, String)> {
    let mut aliases = BTreeMap::new();
    for part in tree.split([',', '{', '}']) {
        if let Some((path, alias)) = part.split_once(" as ") {
            let last = segments(path).pop().unwrap_or_default();
            aliases.insert(last, alias.trim().to_string());
        }
    }
    expand_use(tree)
        .into_iter()
        .filter_map(|p| {
            let last = p.last()?.clone();
            let name = aliases.get(&last).cloned().unwrap_or(last);
            Some((p, name))
        })
        .collect()
}

/// The file that holds the deepest module of this path, looking through `pub use` re-exports so
/// that `super::Clock` (re-exported by `mod.rs`) is an edge to `clock.rs`, not to `mod.rs`.
fn file_of(
    module: &[String],
    known: &BTreeMap<Vec<String>, String>,
    reexported: &Reexports,
    depth: usize,
) -> Option<String> {
    let n = (0..=module.len())
        .rev()
        .find(|n| known.contains_key(&module[..*n]))?;
    if depth < 8
        && let Some(name) = module.get(n)
        && let Some(target) = reexported.get(&module[..n]).and_then(|r| r.get(name))
    {
        let mut full = target.clone();
        full.extend(module[n + 1..].iter().cloned());
        return file_of(&full, known, reexported, depth + 1);
    }
    known.get(&module[..n]).cloned()
}

/// The `use` trees of a file, whitespace collapsed.
fn use_trees(code: &str) -> Vec<String> {
    let code = strip(code);
    let bytes = code.as_bytes();
    let mut trees = Vec::new();
    let mut i = 0;
    while let Some(pos) = code[i..].find("use ") {
        let at = i + pos;
        i = at + 4;
        if ident_before(bytes, at) {
            continue;
        }
        let Some(end) = code[i..].find(';') else {
            break;
        };
        trees.push(
            code[i..i + end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        );
        i += end;
    }
    trees
}

/// Paths written through a module the file imported by name: `use super::tabs::discovery;` then
/// `discovery::view::draw(..)` is an edge to `tabs/discovery/view.rs`.
fn paths_through_imported_modules(
    f: &SourceFile,
    children: &BTreeSet<String>,
    known: &BTreeMap<Vec<String>, String>,
) -> Vec<Vec<String>> {
    let aliases: BTreeMap<String, Vec<String>> = use_trees(&f.code)
        .iter()
        .flat_map(|t| tree_leaves(t))
        .filter_map(|(path, name)| {
            let abs = absolute(f, children, &path)?;
            known.contains_key(&abs).then_some((name, abs))
        })
        .filter(|(name, _)| !children.contains(name) && name != "self" && name != "super")
        .collect();
    let code = strip(&f.code);
    aliases
        .iter()
        .flat_map(|(alias, abs)| {
            paths_starting(&code, alias).into_iter().map(|p| {
                let mut path = abs.clone();
                path.extend(p.into_iter().skip(1));
                path
            })
        })
        .collect()
}

fn import_graph(files: &[SourceFile]) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| (f.module.clone(), f.rel.clone()))
        .collect();
    let reexported = reexports(files);
    files
        .iter()
        .map(|f| {
            let children = child_modules(&f.code);
            let targets = referenced_paths(&f.code)
                .iter()
                .filter_map(|p| absolute(f, &children, p))
                .chain(paths_through_imported_modules(f, &children, &known))
                .filter_map(|m| file_of(&m, &known, &reexported, 0))
                .filter(|t| *t != f.rel)
                .collect();
            (f.rel.clone(), targets)
        })
        .collect()
}

fn folder(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn the_parser_reads_use_trees_and_inline_paths() {
    let paths = referenced_paths(
        "use super::{http::{self, AppError}, store::Store as S};\n\
         // use crate::console::App;\n\
         let x = \"crate::console\"; fn f() { crate::api::model::Usage::default(); }",
    );
    assert!(paths.contains(&segments("super::http")));
    assert!(paths.contains(&segments("super::http::AppError")));
    assert!(paths.contains(&segments("super::store::Store")));
    assert!(paths.contains(&segments("crate::api::model::Usage::default")));
    assert!(!paths.iter().any(|p| p.contains(&"console".to_string())));
}

#[test]
fn paths_through_an_imported_module_are_edges() {
    let file = SourceFile {
        rel: "console/view.rs".into(),
        module: vec!["console".into(), "view".into()],
        code: "use super::tabs::discovery;\nfn f() { discovery::view::draw(); }".into(),
    };
    let known: BTreeMap<Vec<String>, String> = [
        (
            segments("console::tabs::discovery"),
            "console/tabs/discovery/mod.rs",
        ),
        (
            segments("console::tabs::discovery::view"),
            "console/tabs/discovery/view.rs",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect();
    let paths = paths_through_imported_modules(&file, &BTreeSet::new(), &known);
    assert_eq!(
        paths,
        vec![segments("console::tabs::discovery::view::draw")]
    );
}

#[test]
fn the_checker_finds_a_cycle_across_folders() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a/x.rs", vec!["b/y.rs"]),
        ("b/y.rs", vec!["a/x.rs"]),
        ("a/z.rs", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(
        cycles(&graph),
        vec![vec!["a/x.rs".to_string(), "b/y.rs".to_string()]]
    );
}

/// The one file outside `http/` that may name it: the module that declares `http` and starts the
/// server on the sandbox's state (the composition root).
const SANDBOX_ROOT: &str = "sandbox/mod.rs";

/// Every edge from a file `from` accepts into a file under `into`, as "a imports b".
fn imports_into(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: impl Fn(&str) -> bool,
    into: &str,
) -> Vec<String> {
    graph
        .iter()
        .filter(|(file, _)| from(file))
        .flat_map(|(file, targets)| {
            targets
                .iter()
                .filter(|t| t.starts_with(into))
                .map(move |t| format!("{file} imports {t}"))
        })
        .collect()
}

#[test]
fn the_sandbox_domain_does_not_import_its_http_layer() {
    let graph = import_graph(&library_files());
    assert!(
        graph[SANDBOX_ROOT]
            .iter()
            .any(|t| t.starts_with("sandbox/http/")),
        "the checker no longer sees the composition root start the HTTP server"
    );
    let domain =
        |f: &str| f.starts_with("sandbox/") && !f.starts_with("sandbox/http/") && f != SANDBOX_ROOT;
    let offenders = imports_into(&graph, domain, "sandbox/http/");
    assert!(offenders.is_empty(), "{offenders:#?}");
}

const GATEWAY_ROOT: &str = "gateway/mod.rs";

/// The gateway's domain (the canonical trade, the rules, the inbox, the execution) decides what
/// may execute; the edge (`gateway/http/`) only routes, reads and answers. The domain knows
/// nothing of the server: neither the edge's modules nor the server's types.
#[test]
fn the_gateway_domain_does_not_import_its_edge() {
    let files = library_files();
    let graph = import_graph(&files);
    assert!(
        graph[GATEWAY_ROOT]
            .iter()
            .any(|t| t.starts_with("gateway/http/")),
        "the checker no longer sees the composition root start the HTTP server"
    );
    let domain =
        |f: &str| f.starts_with("gateway/") && !f.starts_with("gateway/http/") && f != GATEWAY_ROOT;
    let offenders = imports_into(&graph, domain, "gateway/http/");
    assert!(offenders.is_empty(), "{offenders:#?}");
    let servers: Vec<&str> = files
        .iter()
        .filter(|f| domain(&f.rel) && f.code.contains("axum::"))
        .map(|f| f.rel.as_str())
        .collect();
    assert!(
        servers.is_empty(),
        "server types in the domain: {servers:?}"
    );
}

#[test]
fn configuration_does_not_import_the_console() {
    let graph = import_graph(&library_files());
    let offenders = imports_into(&graph, |f| f == "config.rs", "console/");
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn the_servers_do_not_import_the_console() {
    let graph = import_graph(&library_files());
    let servers = |f: &str| f.starts_with("sandbox/") || f.starts_with("gateway/");
    let offenders = imports_into(&graph, servers, "console/");
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn the_console_does_not_import_the_servers() {
    // It is handed a gateway's URL and keys (`embedded.rs`, from main.rs); it starts no server.
    let graph = import_graph(&library_files());
    let console = |f: &str| f.starts_with("console/");
    let mut offenders = imports_into(&graph, console, "sandbox/");
    offenders.extend(imports_into(&graph, console, "gateway/"));
    offenders.extend(imports_into(&graph, console, "embedded.rs"));
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn the_gateway_does_not_import_the_sandbox() {
    // It stands in front of any upstream, the real service included: it speaks HTTP to it.
    let graph = import_graph(&library_files());
    let offenders = imports_into(&graph, |f| f.starts_with("gateway/"), "sandbox/");
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn no_import_cycle_spans_more_than_one_folder() {
    let graph = import_graph(&library_files());
    let spanning: Vec<Vec<String>> = cycles(&graph)
        .into_iter()
        .filter(|c| c.iter().map(|f| folder(f)).collect::<BTreeSet<_>>().len() > 1)
        .collect();
    assert!(spanning.is_empty(), "cycles across folders: {spanning:#?}");
}

/// The gateway decides what may execute: each of its files small enough to read whole.
#[test]
fn no_gateway_file_has_more_than_eight_hundred_lines_of_code() {
    let long: Vec<String> = library_files()
        .iter()
        .filter(|f| f.rel.starts_with("gateway/"))
        .map(|f| (f.rel.clone(), f.code.lines().count()))
        .filter(|(_, n)| *n > 800)
        .map(|(f, n)| format!("{f}: {n} lines"))
        .collect();
    assert!(long.is_empty(), "split these by responsibility: {long:#?}");
}

#[test]
fn no_source_file_has_more_than_a_thousand_lines_of_code() {
    let long: Vec<String> = library_files()
        .iter()
        .map(|f| (f.rel.clone(), f.code.lines().count()))
        .chain(std::iter::once({
            let main = std::fs::read_to_string(src_dir().join("main.rs")).unwrap();
            let lines: Vec<&str> = main.lines().collect();
            let n = test_module_start(&lines).unwrap_or(lines.len());
            ("main.rs".to_string(), n)
        }))
        .filter(|(_, n)| *n > MAX_CODE_LINES)
        .map(|(f, n)| format!("{f}: {n} lines"))
        .collect();
    assert!(long.is_empty(), "split these by responsibility: {long:#?}");
}

/// Issue 35: the binary's entry point is its command line and a dispatch; each command is a module
/// of `cmd/`.
#[test]
fn main_rs_is_under_six_hundred_lines() {
    let main = std::fs::read_to_string(src_dir().join("main.rs")).unwrap();
    let n = main.lines().count();
    assert!(
        n < 600,
        "main.rs has {n} lines: move a command into src/cmd/"
    );
}

/// Issue 35: the gateway reads top-down — each of its files imports only files below it, so a
/// reader can follow a request without coming back to where they started.
#[test]
fn no_import_cycle_between_files_of_the_gateway() {
    let graph: BTreeMap<String, BTreeSet<String>> = import_graph(&library_files())
        .into_iter()
        .filter(|(f, _)| f.starts_with("gateway/"))
        .map(|(f, to)| {
            let to = to
                .into_iter()
                .filter(|t| t.starts_with("gateway/"))
                .collect();
            (f, to)
        })
        .collect();
    let found = cycles(&graph);
    assert!(found.is_empty(), "cycles between gateway files: {found:#?}");
}

/// Issue 35: the gateway's domain in layers you can name, each importing only those below it. The
/// root `mod.rs` composes them and is in none.
#[test]
fn each_gateway_layer_imports_only_the_layers_below_it() {
    const LAYERS: [&str; 7] = [
        "model", "rules", "store", "upstream", "gate", "flow", "http",
    ];
    let layer = |file: &str| {
        let rest = file.strip_prefix("gateway/")?;
        let top = rest.split('/').next()?;
        LAYERS.iter().position(|l| *l == top)
    };
    let mut upward = Vec::new();
    for (file, targets) in import_graph(&library_files()) {
        let Some(from) = layer(&file) else { continue };
        for target in targets {
            if let Some(to) = layer(&target)
                && to > from
            {
                upward.push(format!(
                    "{file} ({}) imports {target} ({})",
                    LAYERS[from], LAYERS[to]
                ));
            }
        }
    }
    assert!(upward.is_empty(), "imports up the layers: {upward:#?}");
}
