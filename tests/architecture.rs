//! The architecture test: dependencies between the modules of `src/` point
//! one way, down.
//!
//! It reads every `src/**/*.rs` file, finds the `crate::...` paths in the
//! code (use declarations and inline paths alike; comments and string
//! literals are skipped) and the `super::...` paths, resolves each to the
//! top-level module it names, and fails when a module reaches one of the
//! same or a higher rank. It also fails when two child modules of one
//! top-level module import each other (a two-way pair such as the old
//! `config::load` <-> `config::sections_check`).
//!
//! The layers, lowest first (a module may import only lower ranks):
//!
//! | rank | modules                               | why there                                            |
//! |------|---------------------------------------|------------------------------------------------------|
//! | 0    | platform, pyfmt, compat, redact       | foundations: OS branches, Python spellings, lenient scalars; import nothing of ours |
//! | 1    | cronexpr, jinja, logging, pyjson      | pure engines over the foundations: the schedule engine (its messages quote values as Python does); the template engine (config compiles, report renders) and the dictConfig/%-format logging, which owns its section type so config can check it; Python's JSON values and `str` (over pyfmt's float spelling), which the job state and the job commands share |
//! | 2    | config, jobcli, cli                   | the model, loading, validation; the job-facing client commands, which need only Python's JSON and the OS; the clients of the web listener (the MCP stdio bridge) and what they share (connection flags, the HTTP client), which need only the OS |
//! | 3    | fingerprint, tls                      | the job-set id, computed from loaded config; the `https://` listener of the web API and the job endpoint |
//! | 4    | job, gossip                           | one run of a configured job; the gossip election's pure view |
//! | 5    | status, state                         | the state the edges publish (leadership, Kubernetes mode) on watch channels, for the gate, the API and the metrics to read; the durable store's files and record formats (peers) |
//! | 6    | report, metrics                       | read finished runs and published state (peers: they must not import each other) |
//! | 7    | scheduler                             | the run loop over everything below                   |
//! | 8    | web, source, kube, cluster, durable, jobapi, tui | edges: backends behind the scheduler's ports (peers); the job endpoint serves runs from the store; the terminal dashboard, a client of the web API |
//! | 9    | daemon, main                          | the daemon's wiring (plans and builds the edges) and the binary that parses flags and calls it |
//!
//! A new top-level module must be given a rank here; the test refuses a
//! module it does not know.
//!
//! Limits, on purpose: a name reached through a re-export counts as the
//! module that re-exports it, and macros are not expanded. Both only ever
//! hide an edge, never invent one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module and its rank (see the table above).
const LAYERS: &[(&str, u8)] = &[
    ("platform", 0),
    ("pyfmt", 0),
    ("compat", 0),
    ("cronexpr", 1),
    ("redact", 0),
    ("jinja", 1),
    ("logging", 1),
    ("pyjson", 1),
    ("config", 2),
    ("jobcli", 2),
    ("cli", 2),
    ("fingerprint", 3),
    ("tls", 3),
    ("job", 4),
    ("gossip", 4),
    ("status", 5),
    ("state", 5),
    ("report", 6),
    ("metrics", 6),
    ("scheduler", 7),
    ("web", 8),
    ("source", 8),
    ("kube", 8),
    ("cluster", 8),
    ("durable", 8),
    ("jobapi", 8),
    ("tui", 8),
    ("daemon", 9),
    ("main", 9),
];

/// Upward edges tolerated while a fix is in flight. Each entry must still
/// occur (a stale entry fails the test), so the list only ever shrinks;
/// it is empty now and should stay so.
const KNOWN_VIOLATIONS: &[(&str, &str, &str)] = &[];

/// Two-way pairs between the child modules of one top-level module that
/// exist today, outside this branch's files. Same rule: only shrinks.
const KNOWN_PAIRS: &[(&str, &str, &str)] = &[
    // hint.rs re-splits the expression with parse::items while parse.rs
    // asks hint.rs for its hints; another branch is working in cronexpr
    // now, so the split (items into a lexer module both use) waits for it.
    ("cronexpr", "hint", "parse"),
];

fn rank(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// One path found in the code: the line it starts on and its segments,
/// made absolute (from the crate root).
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    line: usize,
    path: Vec<String>,
}

/// Replaces comments and the contents of string and char literals with
/// spaces (newlines kept, so line numbers stay right).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"') | Some('#'))
            && (i == 0 || !is_ident(chars[i - 1]))
        {
            // A raw string: r"..." or r#"..."# (any number of #).
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            for _ in i..=j {
                out.push(' ');
            }
            i = j + 1;
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += hashes + 1;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                out.push(' ');
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    out.push(' ');
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                out.push(' ');
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                out.push_str("   ");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Reads the path tree that starts at `pos` (after a `::`): an identifier
/// with more segments, or a `{...}` group of trees. Returns every path,
/// cut to `depth` segments.
fn path_tree(code: &[char], mut pos: usize, depth: usize) -> Vec<Vec<String>> {
    let skip_ws = |p: &mut usize| {
        while code.get(*p).is_some_and(|c| c.is_whitespace()) {
            *p += 1;
        }
    };
    skip_ws(&mut pos);
    if depth == 0 {
        return vec![Vec::new()];
    }
    if code.get(pos) == Some(&'{') {
        // Split the group at its top-level commas.
        let mut trees = Vec::new();
        let mut level = 0;
        let mut start = pos + 1;
        let mut p = pos;
        while p < code.len() {
            match code[p] {
                '{' => level += 1,
                '}' | ',' if level == 1 => {
                    trees.extend(path_tree(code, start, depth));
                    start = p + 1;
                    if code[p] == '}' {
                        break;
                    }
                }
                '}' => level -= 1,
                _ => {}
            }
            p += 1;
        }
        return trees.into_iter().filter(|t| !t.is_empty()).collect();
    }
    let begin = pos;
    while code.get(pos).is_some_and(|c| is_ident(*c)) {
        pos += 1;
    }
    if begin == pos {
        return vec![Vec::new()];
    }
    let name: String = code[begin..pos].iter().collect();
    let mut after = pos;
    skip_ws(&mut after);
    if code.get(after) == Some(&':') && code.get(after + 1) == Some(&':') {
        path_tree(code, after + 2, depth - 1)
            .into_iter()
            .map(|mut rest| {
                rest.insert(0, name.clone());
                rest
            })
            .collect()
    } else {
        vec![vec![name]]
    }
}

/// Finds the `crate::` and `super::` paths of one file whose module path
/// is `module` (inline `mod x { ... }` blocks are followed), resolved to
/// absolute paths of at most three segments.
fn references(text: &str, module: &[String]) -> Vec<Reference> {
    let code: Vec<char> = code_only(text).chars().collect();
    let mut found = Vec::new();
    let mut line = 1;
    // Inline modules open at a brace depth: (name, depth).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        match c {
            '\n' => line += 1,
            '{' => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            '}' => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            ';' => pending_mod = None,
            _ => {}
        }
        if !is_ident(c) || (i > 0 && (is_ident(code[i - 1]) || code[i - 1] == '$')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < code.len() && is_ident(code[i]) {
            i += 1;
        }
        let word: String = code[start..i].iter().collect();
        if word == "mod" {
            let mut p = i;
            while code.get(p).is_some_and(|c| c.is_whitespace()) {
                p += 1;
            }
            let b = p;
            while code.get(p).is_some_and(|c| is_ident(*c)) {
                p += 1;
            }
            pending_mod = Some(code[b..p].iter().collect());
            continue;
        }
        if word != "crate" && word != "super" && word != "self" {
            continue;
        }
        // A path segment after `::` (as in `super::super`) is read by the
        // tree walk below, not here.
        if start >= 2 && code[start - 1] == ':' && code[start - 2] == ':' {
            continue;
        }
        let mut p = i;
        while code.get(p).is_some_and(|c| c.is_whitespace()) {
            p += 1;
        }
        if !(code.get(p) == Some(&':') && code.get(p + 1) == Some(&':')) {
            continue;
        }
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        for tail in path_tree(&code, p + 2, 6) {
            let mut base = match word.as_str() {
                "crate" => Vec::new(),
                _ => here.clone(),
            };
            let mut rest = tail.into_iter().peekable();
            if word == "super" {
                base.pop();
                while rest.peek().is_some_and(|s| s == "super") {
                    rest.next();
                    base.pop();
                }
            }
            let mut path: Vec<String> = base;
            path.extend(rest.filter(|s| s != "self" && s != "*"));
            path.truncate(3);
            if !path.is_empty() {
                found.push(Reference { line, path });
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of each source file (`src/config/load.rs` is
/// `config::load`; a `#[path = "x_tests.rs"] mod tests;` file is the
/// `tests` child of the file that declares it). The library root is left
/// out: it only declares and re-exports.
fn module_paths(src: &Path, files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<String>> {
    let mut paths = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("file under src");
        let mut parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if parts == ["lib"] {
            continue;
        }
        if parts.first().is_some_and(|p| p == "main" || p == "bin") {
            parts = vec!["main".to_owned()];
        }
        paths.insert(file.clone(), parts);
    }
    // Files brought in with #[path]: rename them after their declaration.
    for file in files {
        let Some(declarer) = paths.get(file).cloned() else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(target) = line
                .trim()
                .strip_prefix("#[path = \"")
                .and_then(|r| r.strip_suffix("\"]"))
            else {
                continue;
            };
            let name = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("mod "))
                .map(|l| l.trim_end_matches(';').trim().to_owned());
            if let (Some(name), Some(dir)) = (name, file.parent()) {
                let included = dir.join(target);
                let mut module = declarer.clone();
                module.push(name);
                paths.insert(included, module);
            }
        }
    }
    paths
}

/// Every reference of every file, keyed by file, with its module path.
fn scan() -> Vec<(String, Vec<String>, Reference)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules = module_paths(&src, &files);
    let mut all = Vec::new();
    for (file, module) in &modules {
        let text = std::fs::read_to_string(file).expect("readable source");
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        for reference in references(&text, module) {
            all.push((shown.clone(), module.clone(), reference));
        }
    }
    all
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let unknown: BTreeSet<String> = module_paths(&src, &files)
        .into_values()
        .filter_map(|m| m.first().cloned())
        .filter(|top| rank(top).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "modules without a layer: {unknown:?}; give each a rank in LAYERS (tests/architecture.rs)"
    );
}

#[test]
fn modules_import_only_lower_layers() {
    let mut problems = Vec::new();
    let mut seen_known = BTreeSet::new();
    for (file, module, reference) in scan() {
        let (Some(from), Some(to)) = (module.first(), reference.path.first()) else {
            continue;
        };
        if from == to || from == "main" {
            continue;
        }
        let (Some(from_rank), Some(to_rank)) = (rank(from), rank(to)) else {
            // Not one of our modules (e.g. `crate::SomeReexport` or a
            // macro-generated name): nothing to rank.
            continue;
        };
        if to_rank < from_rank {
            continue;
        }
        if KNOWN_VIOLATIONS
            .iter()
            .any(|(f, t, _)| f == from && t == to)
        {
            seen_known.insert((from.clone(), to.clone()));
            continue;
        }
        problems.push(format!(
            "{file}:{}: {from} (rank {from_rank}) imports {} (rank {to_rank}): a module may \
             only use modules of a lower rank",
            reference.line,
            reference.path.join("::"),
        ));
    }
    for (from, to, why) in KNOWN_VIOLATIONS {
        if !seen_known.contains(&((*from).to_owned(), (*to).to_owned())) {
            problems.push(format!(
                "KNOWN_VIOLATIONS lists {from} -> {to} ({why}), which no longer occurs: \
                 remove the entry"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn no_two_way_pairs_inside_a_module() {
    let refs = scan();
    // Child modules that exist, per top-level module.
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, module, _) in &refs {
        if let [top, child, ..] = module.as_slice() {
            children
                .entry(top.clone())
                .or_default()
                .insert(child.clone());
        }
    }
    // (top, from child, to child) -> first place seen.
    let mut edges: BTreeMap<(String, String, String), String> = BTreeMap::new();
    for (file, module, reference) in &refs {
        let ([top, from, ..], [to_top, to, ..]) = (module.as_slice(), reference.path.as_slice())
        else {
            continue;
        };
        if top != to_top || from == to || !children.get(top).is_some_and(|c| c.contains(to)) {
            continue;
        }
        edges
            .entry((top.clone(), from.clone(), to.clone()))
            .or_insert_with(|| format!("{file}:{}", reference.line));
    }
    let mut problems = Vec::new();
    for (top, x, y) in KNOWN_PAIRS {
        let both = [(x, y), (y, x)].iter().all(|(a, b)| {
            edges.contains_key(&((*top).to_owned(), (**a).to_owned(), (**b).to_owned()))
        });
        if !both {
            problems.push(format!(
                "KNOWN_PAIRS lists {top}::{x} <-> {top}::{y}, which no longer occurs: remove \
                 the entry"
            ));
        }
    }
    for ((top, a, b), at) in &edges {
        if a >= b {
            continue;
        }
        if let Some(back) = edges.get(&(top.clone(), b.clone(), a.clone())) {
            let known = KNOWN_PAIRS
                .iter()
                .any(|(t, x, y)| t == top && ((x == a && y == b) || (x == b && y == a)));
            if !known {
                problems.push(format!(
                    "{top}::{a} and {top}::{b} import each other ({at} and {back}): move what \
                     both need into a module below them"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// The scanner itself: if it stopped seeing paths, the tests above would
/// pass on anything.
#[test]
fn the_scanner_sees_paths_and_skips_text() {
    let module = vec!["config".to_owned(), "load".to_owned()];
    let text = r##"
use crate::platform;
use crate::{job::RunRecord, report as r};
use super::super::web;
// use crate::scheduler;
/* crate::metrics::x */
let s = "crate::kube::y";
let raw = r#"crate::cluster"#;
let c = '"'; let l: &'static str = x;
fn f() { crate::cronexpr::Schedule::parse(); }
mod tests { use super::validate; }
use super::sections::{Located, Sections};
"##;
    let found: Vec<(usize, String)> = references(text, &module)
        .into_iter()
        .map(|r| (r.line, r.path.join("::")))
        .collect();
    assert_eq!(
        found,
        vec![
            (2, "platform".to_owned()),
            (3, "job::RunRecord".to_owned()),
            (3, "report".to_owned()),
            (4, "web".to_owned()),
            (10, "cronexpr::Schedule::parse".to_owned()),
            (11, "config::load::validate".to_owned()),
            (12, "config::sections::Located".to_owned()),
            (12, "config::sections::Sections".to_owned()),
        ]
    );
}

// ---------------------------------------------------------------------
// Drift: the written descriptions of the layout follow the tree. Each
// test names the text to update when it fails.

/// The crate root's text.
fn lib_rs() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs")
}

/// The top-level modules `src/lib.rs` declares (`mod x;` at any
/// visibility).
fn declared_modules() -> BTreeSet<String> {
    lib_rs()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter_map(|l| {
            let rest = l.trim().trim_end_matches(';');
            let rest = rest
                .strip_prefix("pub(crate) ")
                .or_else(|| rest.strip_prefix("pub "))
                .unwrap_or(rest);
            rest.strip_prefix("mod ").map(|m| m.trim().to_owned())
        })
        .collect()
}

/// The first backticked word of `line` (`[`x`]` or `` `x` ``).
fn first_backticked(line: &str) -> Option<String> {
    let start = line.find('`')? + 1;
    let end = start + line[start..].find('`')?;
    Some(line[start..end].to_owned())
}

/// The modules of a rank table (`| rank | a, b (why) |` rows): each
/// module with its rank. A cell's pieces are split on commas; a piece's
/// first word is the module.
fn rank_table(text: &str, row_prefix: &str) -> BTreeMap<String, u8> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(row) = line.trim().strip_prefix(row_prefix) else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(rank), Some(modules)) = (cells.first(), cells.get(1)) else {
            continue;
        };
        let Ok(rank) = rank.parse::<u8>() else {
            continue;
        };
        // A parenthesis may hold commas of its own: drop it first.
        let mut plain = String::new();
        let mut depth = 0;
        for c in modules.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => plain.push(c),
                _ => {}
            }
        }
        for piece in plain.split(',') {
            if let Some(name) = piece.split_whitespace().next() {
                out.insert(name.to_owned(), rank);
            }
        }
    }
    out
}

/// The layers as the test holds them, without the binary (which is no
/// module of the library).
fn library_layers() -> BTreeMap<String, u8> {
    LAYERS
        .iter()
        .filter(|(m, _)| *m != "main")
        .map(|(m, r)| ((*m).to_owned(), *r))
        .collect()
}

#[test]
fn lib_rs_lists_every_module_it_declares_in_rank_order() {
    let listed: Vec<String> = lib_rs()
        .lines()
        .filter_map(|l| l.strip_prefix("//! - "))
        .filter_map(first_backticked)
        .collect();
    let declared = declared_modules();
    let listed_set: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(
        listed_set, declared,
        "src/lib.rs: the module list in the crate doc must name exactly the modules declared below it"
    );
    assert_eq!(listed.len(), listed_set.len(), "a module listed twice");
    let ranks: Vec<u8> = listed.iter().filter_map(|m| rank(m)).collect();
    assert_eq!(ranks.len(), listed.len(), "a listed module has no layer");
    assert!(
        ranks.windows(2).all(|w| w[0] <= w[1]),
        "src/lib.rs lists the modules bottom up (by rank): {listed:?} has ranks {ranks:?}"
    );
    // And every entry of src/ is one of them (a stray file is a module
    // nobody declared).
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(&src).expect("src/") {
        let path = entry.expect("entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let is_rust = path.extension().is_some_and(|e| e == "rs");
        if (is_rust && stem != "lib" && stem != "main") || path.is_dir() {
            assert!(
                declared.contains(stem),
                "src/{stem}: not declared in src/lib.rs"
            );
        }
    }
}

#[test]
fn the_architecture_page_ranks_every_module_as_the_test_does() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let page =
        std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let mut expected = library_layers();
    expected.insert("main".to_owned(), rank("main").expect("main has a layer"));
    assert_eq!(
        rank_table(&page, "| "),
        expected,
        "docs/architecture.md: the rank table must match LAYERS in tests/architecture.rs"
    );
}

#[test]
fn this_files_header_matches_its_layers() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/architecture.rs")).expect("this file");
    let mut expected = library_layers();
    expected.insert("main".to_owned(), rank("main").expect("main has a layer"));
    assert_eq!(
        rank_table(&text, "//! | "),
        expected,
        "tests/architecture.rs: the header's table must match LAYERS"
    );
}

/// The largest production file allowed, in lines (tests aside).
const MAX_PRODUCTION_LINES: usize = 800;

/// The files of `src/` that are test modules: declared right under a
/// `#[cfg(test)]` (`mod tests;`), so none of their lines is production.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        // Where this file's child modules live.
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().map(Path::to_path_buf),
            _ => Some(file.with_extension("")),
        };
        let Some(dir) = dir else { continue };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (at, line) in lines.iter().enumerate() {
            if *line != "#[cfg(test)]" {
                continue;
            }
            // An optional `#[path = "file.rs"]` (relative to this file's
            // directory), then the declaration.
            let mut next = at + 1;
            let mut path = None;
            if let Some(given) = lines
                .get(next)
                .and_then(|l| l.strip_prefix("#[path = \""))
                .and_then(|l| l.strip_suffix("\"]"))
            {
                path = file.parent().map(|p| p.join(given));
                next += 1;
            }
            let declared = lines.get(next).and_then(|l| {
                l.trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ")
                    .strip_prefix("mod ")
                    .and_then(|rest| rest.strip_suffix(';'))
            });
            let Some(name) = declared else { continue };
            let candidates = match path {
                Some(path) => vec![path],
                None => vec![
                    dir.join(format!("{name}.rs")),
                    dir.join(name).join("mod.rs"),
                ],
            };
            for candidate in candidates {
                if candidate.exists() {
                    out.insert(candidate);
                }
            }
        }
    }
    out
}

#[test]
fn no_production_file_is_over_800_lines() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let tests = test_only_files(&files);
    let mut over = Vec::new();
    for file in &files {
        if tests.contains(file) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file");
        // The production part ends where the file's inline test module
        // begins (`#[cfg(test)]` then `mod tests {`).
        let lines: Vec<&str> = text.lines().collect();
        let production = lines
            .windows(2)
            .position(|pair| {
                let next = pair[1].trim();
                pair[0].trim() == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{')
            })
            .unwrap_or(lines.len());
        if production > MAX_PRODUCTION_LINES {
            over.push(format!(
                "{}: {production} lines",
                file.strip_prefix(&src).unwrap_or(file).display()
            ));
        }
    }
    assert!(
        over.is_empty(),
        "split these by concept (no production file over {MAX_PRODUCTION_LINES} lines, tests aside):\n{}",
        over.join("\n")
    );
}
