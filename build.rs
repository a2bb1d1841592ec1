//! Composes the WGSL of every kernel variant from `shaders/`, at build time.
//!
//! Each shader file states what it needs: `#import name` (a path under `shaders/` without
//! `.wgsl`) inserts that file once per variant, wherever it is first imported; `#ifdef NAME`,
//! `#ifndef NAME`, `#else` and `#endif` keep lines for some variants only. A variant's defines
//! are its kernel (`rope`, `sinusoidal`), pair layout (`interleaved`, `halfsplit`), width
//! (`x1`, `x4`) and storage dtype (`f32`, `f16`, `bf16`), and for the fused QKV kernel
//! (`fused`) also the KV cache's dtype (`cache_f32`, …) and how its QK-norm sums a head
//! (`barrier`, `subgroups`); everything else a variant varies is
//! an override constant set at pipeline creation. The composed sources land in
//! `$OUT_DIR/shaders.rs` as `SOURCES[kernel][pair layout][width][dtype]` and
//! `FUSED[pair layout][width][dtype][cache dtype][reduction]`, in the orders of the lists below (which
//! `Specialization::source` in `src/kernels/mod.rs` indexes by). A missing file, an unknown
//! directive, an unbalanced `#ifdef`, or a file under `shaders/` no variant uses fails the
//! build. naga validates every variant in `tests/shaders.rs`.
//!
//! The functions exported for users' own kernels (`shaders/export/`, `wgpu_posenc::wgsl`)
//! are composed the same way with the scalar width; only the declarations the exported
//! functions reach are kept, and every name they declare (functions, structs, aliases,
//! constants, overrides, variables) is prefixed `posenc_` in code (not in comments), so that
//! they can sit beside any kernel's own names.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

const KERNELS: [&str; 2] = ["rope", "sinusoidal"];
const PAIR_LAYOUTS: [&str; 2] = ["interleaved", "halfsplit"];
const WIDTHS: [&str; 2] = ["x1", "x4"];
const DTYPES: [&str; 3] = ["f32", "f16", "bf16"];
/// The KV cache's storage types of the fused QKV kernel.
const CACHE_DTYPES: [&str; 3] = ["cache_f32", "cache_f16", "cache_bf16"];
/// How the fused QKV kernel's QK-norm adds a head's sums: workgroup memory and a barrier,
/// or subgroup shuffles (`enable subgroups;`, where the device has `Features::SUBGROUP`).
const REDUCTIONS: [&str; 2] = ["barrier", "subgroups"];
/// Standalone shaders, read whole by the code that uses them.
const STANDALONE: [&str; 2] = ["identity", "position_grid"];
/// The exported modules: entry file, the name of its constant, and the functions and
/// bindings a user's kernel calls (with what they use, all that is exported).
const EXPORTS: [(&str, &str, &[&str]); 2] = [
    (
        "export/rope",
        "EXPORT_ROPE",
        &["rope_cos_sin", "rope_rotate"],
    ),
    (
        "export/binding",
        "EXPORT_ROPE_BINDING",
        &[
            "rope_cos_sin",
            "rope_rotate",
            "angle_words",
            "rope_pair_cos_sin",
        ],
    ),
];
/// What the exported names start with.
const PREFIX: &str = "posenc_";

fn main() {
    println!("cargo:rerun-if-changed=shaders");
    let root = Path::new("shaders");
    let mut used = BTreeSet::new();
    let mut out = String::new();
    // `first` is the entry file and the first define of every variant of the table, or
    // `None` for a table whose first list holds them.
    let mut table =
        |name: &str, doc: &str, first: Option<&'static str>, lists: &[&[&'static str]]| {
            let dims: String = lists
                .iter()
                .rev()
                .fold("&str".into(), |t, l| format!("[{t}; {}]", l.len()));
            writeln!(
                out,
                "/// Composed WGSL: `{doc}`.\npub(crate) static {name}: {dims} = "
            )
            .unwrap();
            let mut defines: Vec<&'static str> = first.into_iter().collect();
            nested(&mut out, lists, &mut defines, &mut |defines| {
                let entry = defines[0];
                let mut source = format!("// wgpu-posenc {}\n", defines.join(" "));
                let mut seen = BTreeSet::new();
                compose(root, entry, defines, &mut seen, &mut source)
                    .unwrap_or_else(|e| panic!("shaders ({}): {e}", defines.join(" ")));
                used.extend(seen);
                source
            });
            out.push_str(";\n");
        };
    table(
        "SOURCES",
        "[kernel][pair layout][width][dtype]",
        None,
        &[&KERNELS, &PAIR_LAYOUTS, &WIDTHS, &DTYPES],
    );
    table(
        "FUSED",
        "[pair layout][width][dtype][cache dtype][reduction]",
        Some("fused"),
        &[&PAIR_LAYOUTS, &WIDTHS, &DTYPES, &CACHE_DTYPES, &REDUCTIONS],
    );
    for (entry, constant, roots) in EXPORTS {
        let mut source = String::new();
        let mut seen = BTreeSet::new();
        compose(root, entry, &["x1"], &mut seen, &mut source)
            .unwrap_or_else(|e| panic!("shaders ({entry}): {e}"));
        used.extend(seen);
        writeln!(
            out,
            "/// `shaders/{entry}.wgsl`, composed, what its roots use, names prefixed."
        )
        .unwrap();
        writeln!(
            out,
            "pub(crate) const {constant}: &str = {:?};",
            exported(&source, roots)
        )
        .unwrap();
    }
    for file in wgsl_files(root, root) {
        let name = file.trim_end_matches(".wgsl");
        if !used.contains(name) && !STANDALONE.contains(&name) {
            panic!("shaders/{file} is imported by no variant: import it or remove it");
        }
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("shaders.rs");
    std::fs::write(dest, out).unwrap();
}

/// Writes the nested array literal of `make(defines)` over every combination of `lists`.
fn nested(
    out: &mut String,
    lists: &[&[&'static str]],
    defines: &mut Vec<&'static str>,
    make: &mut dyn FnMut(&[&str]) -> String,
) {
    let Some((first, rest)) = lists.split_first() else {
        let source = make(defines);
        writeln!(out, "{source:?}").unwrap();
        return;
    };
    out.push_str("[\n");
    for &d in first.iter() {
        defines.push(d);
        nested(out, rest, defines, make);
        defines.pop();
        out.push_str(",\n");
    }
    out.push(']');
}

/// Appends `name` (once per variant) with its directives carried out.
fn compose(
    root: &Path,
    name: &str,
    defines: &[&str],
    seen: &mut BTreeSet<String>,
    out: &mut String,
) -> Result<(), String> {
    if !seen.insert(name.to_string()) {
        return Ok(());
    }
    let path = root.join(format!("{name}.wgsl"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    // One entry per open #ifdef: whether its lines are kept.
    let mut open: Vec<bool> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("shaders/{name}.wgsl:{}", n + 1);
        let keep = open.iter().all(|&k| k);
        let Some(directive) = line.trim_start().strip_prefix('#') else {
            if keep {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        };
        let mut words = directive.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("import"), Some(file), None) => {
                if keep {
                    compose(root, file, defines, seen, out)
                        .map_err(|e| format!("{}: {e}", at()))?;
                }
            }
            (Some("ifdef"), Some(d), None) => open.push(defines.contains(&d)),
            (Some("ifndef"), Some(d), None) => open.push(!defines.contains(&d)),
            (Some("else"), None, None) => {
                let top = open
                    .last_mut()
                    .ok_or_else(|| format!("{}: #else without #ifdef", at()))?;
                *top = !*top;
            }
            (Some("endif"), None, None) => {
                open.pop()
                    .ok_or_else(|| format!("{}: #endif without #ifdef", at()))?;
            }
            _ => return Err(format!("{}: unknown directive {line:?}", at())),
        }
    }
    if !open.is_empty() {
        return Err(format!("shaders/{name}.wgsl: #ifdef without #endif"));
    }
    Ok(())
}

/// One module-scope declaration of a composed source: its lines (with the comment lines
/// right above it) and the name it declares.
struct Item {
    name: String,
    text: String,
}

/// The keywords that open a module-scope declaration, before its name.
const DECLARES: [&str; 5] = ["fn ", "struct ", "alias ", "const ", "override "];

/// The code of `line` without its `//` comment.
fn code(line: &str) -> &str {
    line.split_once("//").map_or(line, |(c, _)| c)
}

/// The identifiers of `text`'s code (comments left out).
fn words(text: &str) -> BTreeSet<String> {
    text.lines()
        .flat_map(|l| {
            code(l)
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The name a module-scope line declares, if it starts a declaration.
fn declared(line: &str) -> Option<String> {
    let rest = DECLARES
        .iter()
        .find_map(|k| line.strip_prefix(k))
        .or_else(|| {
            line.split_once("var<")
                .and_then(|(_, r)| r.split_once('>'))
                .map(|(_, r)| r)
        })?;
    let name: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The module-scope declarations of `source`, and the comment block that opens it (the
/// entry file's header). Comment blocks that stand apart from any declaration (a file's
/// header) are dropped.
fn items(source: &str) -> (String, Vec<Item>) {
    let lines: Vec<&str> = source.lines().collect();
    let mut header = String::new();
    let mut i = 0;
    while i < lines.len() && lines[i].starts_with("//") {
        header.push_str(lines[i]);
        header.push('\n');
        i += 1;
    }
    let mut items = Vec::new();
    let mut comments = String::new();
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with("//") {
            comments.push_str(line);
            comments.push('\n');
            continue;
        }
        let Some(name) = declared(line) else {
            assert!(
                line.trim().is_empty(),
                "exported WGSL: a module-scope line that declares nothing: {line}"
            );
            comments.clear();
            continue;
        };
        let mut text = std::mem::take(&mut comments);
        text.push_str(line);
        text.push('\n');
        // A body in braces ends at a `}` in the first column; anything else at its `;`.
        if code(line).trim_end().ends_with('{') {
            while i < lines.len() {
                text.push_str(lines[i]);
                text.push('\n');
                i += 1;
                if lines[i - 1] == "}" {
                    break;
                }
            }
        } else {
            while !code(text.lines().last().unwrap_or(""))
                .trim_end()
                .ends_with(';')
            {
                text.push_str(lines[i]);
                text.push('\n');
                i += 1;
            }
        }
        items.push(Item { name, text });
    }
    (header, items)
}

/// The exported text of `source`: the declarations `roots` reach (through the names their
/// code uses), in their order, every declared name prefixed in code (comments keep their
/// words), after the entry file's header comment.
fn exported(source: &str, roots: &[&str]) -> String {
    let (header, items) = items(source);
    let declared: BTreeSet<String> = items.iter().map(|it| it.name.clone()).collect();
    let mut keep: BTreeSet<String> = roots.iter().map(|r| r.to_string()).collect();
    for root in roots {
        assert!(
            declared.contains(*root),
            "exported WGSL: {root} is not declared"
        );
    }
    loop {
        let more: BTreeSet<String> = items
            .iter()
            .filter(|it| keep.contains(&it.name))
            .flat_map(|it| words(&it.text))
            .filter(|w| declared.contains(w) && !keep.contains(w))
            .collect();
        if more.is_empty() {
            break;
        }
        keep.extend(more);
    }
    let mut out = header;
    for item in items.iter().filter(|it| keep.contains(&it.name)) {
        out.push('\n');
        for line in item.text.lines() {
            let (c, comment) = match line.find("//") {
                Some(at) => line.split_at(at),
                None => (line, ""),
            };
            out.push_str(&prefixed(c, &declared));
            out.push_str(comment);
            out.push('\n');
        }
    }
    out
}

/// `code` with every name of `declared` prefixed.
fn prefixed(code: &str, declared: &BTreeSet<String>) -> String {
    let mut out = String::with_capacity(code.len() + 64);
    let mut word = String::new();
    for c in code.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if declared.contains(&word) {
            out.push_str(PREFIX);
        }
        out.push_str(&word);
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// Paths of the `.wgsl` files under `dir`, relative to `root`.
fn wgsl_files(root: &Path, dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(wgsl_files(root, &path));
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            files.push(rel);
        }
    }
    files
}
