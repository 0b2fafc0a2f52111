//! The source tree has no module circles: within each crate, no file's module
//! reaches back to itself through the modules it names (`crate::`, `super::`,
//! `self::` paths, `use` groups included). A module may name its ancestors.
//! Test code (files named `*tests*` or `golden*`, and `mod tests` blocks) is
//! left out: it may look at anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a file under `src` defines.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut m: Module = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        m.pop();
    }
    m
}

/// The code of a file without its `mod tests` block, its line comments and
/// its doc comments (a doc link is no dependency).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths named in `code`, resolved from module `m`: each as written after
/// `crate`/`super`/`self`, plus the items of `use` groups.
fn named_paths(m: &Module, code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let start_ok = i == 0 || !word(bytes[i - 1]);
        let head = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|h| start_ok && code[i..].starts_with(h));
        let Some(head) = head else {
            i += 1;
            continue;
        };
        let mut base: Module = match head {
            "crate::" => Vec::new(),
            "self::" => m.clone(),
            _ => m[..m.len().saturating_sub(1)].to_vec(),
        };
        let mut j = i + head.len();
        while code[j..].starts_with("super::") {
            base.pop();
            j += "super::".len();
        }
        // The path's segments, and a `{...}` group after them.
        let mut segs = base;
        loop {
            let k = j + code[j..].bytes().take_while(|&b| word(b)).count();
            if k == j {
                break;
            }
            segs.push(code[j..k].to_string());
            j = k;
            if !code[j..].starts_with("::") {
                break;
            }
            j += 2;
        }
        if code[j..].starts_with('{') {
            let end = code[j..].find('}').map_or(code.len(), |e| j + e);
            for item in code[j + 1..end].split(',') {
                let mut p = segs.clone();
                p.extend(item.trim().split("::").map(|s| s.trim().to_string()));
                out.push(p);
            }
        }
        out.push(segs);
        i = j.max(i + 1);
    }
    out
}

/// Strongly connected components of more than one module.
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    // Kosaraju: order by finish time, then walk the reversed graph.
    fn finish(
        g: &BTreeMap<Module, BTreeSet<Module>>,
        v: &Module,
        seen: &mut BTreeSet<Module>,
        order: &mut Vec<Module>,
    ) {
        if !seen.insert(v.clone()) {
            return;
        }
        for w in &g[v] {
            finish(g, w, seen, order);
        }
        order.push(v.clone());
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for v in graph.keys() {
        finish(graph, v, &mut seen, &mut order);
    }
    let mut rev: BTreeMap<Module, BTreeSet<Module>> =
        graph.keys().map(|k| (k.clone(), BTreeSet::new())).collect();
    for (a, bs) in graph {
        for b in bs {
            rev.get_mut(b).unwrap().insert(a.clone());
        }
    }
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for v in order.iter().rev() {
        let mut comp = Vec::new();
        finish(&rev, v, &mut done, &mut comp);
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

/// The module graph of the crate whose sources are in `src`.
fn graph_of(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mods: BTreeMap<Module, PathBuf> =
        files.into_iter().map(|f| (module_of(src, &f), f)).collect();
    let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, f) in &mods {
        let name = f.file_name().unwrap().to_string_lossy();
        let edges = g.entry(m.clone()).or_default();
        if name.contains("tests") || name.starts_with("golden") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for p in named_paths(m, &code(&text)) {
            // The longest prefix that is a module of this crate.
            let target = (1..=p.len())
                .rev()
                .map(|k| &p[..k])
                .find(|k| mods.contains_key(*k));
            if let Some(t) = target {
                if t != m.as_slice() && !m.starts_with(t) {
                    edges.insert(t.to_vec());
                }
            }
        }
    }
    g
}

#[test]
fn no_crate_has_a_module_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut srcs = vec![root.join("src")];
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        srcs.push(e.path().join("src"));
    }
    let mut found = Vec::new();
    for src in srcs.iter().filter(|s| s.is_dir()) {
        for c in circles(&graph_of(src)) {
            let names: Vec<String> = c.iter().map(|m| m.join("::")).collect();
            found.push(format!("{}: {}", src.display(), names.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "module circles:\n{}", found.join("\n"));
}

/// The check finds a circle when there is one, through `super::` and a group.
#[test]
fn a_circle_is_found() {
    let dir = std::env::temp_dir().join(format!("rperf3-circles-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod x;\nuse crate::b::{self, Y};\n").unwrap();
    std::fs::write(
        src.join("a/x.rs"),
        "use super::super::b::Z; // crate::a::x\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.rs"),
        "/// [`crate::a`]\nfn f() { crate::a::x::g() }\n",
    )
    .unwrap();
    let c = circles(&graph_of(&src));
    std::fs::remove_dir_all(&dir).unwrap();
    let names: Vec<Vec<String>> = c
        .iter()
        .map(|c| c.iter().map(|m| m.join("::")).collect())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let mut got = names[0].clone();
    got.sort();
    assert_eq!(got, ["a::x", "b"]);
}
