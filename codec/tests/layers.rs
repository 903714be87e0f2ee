//! The codec's modules are layered: plain types at the bottom, the driver (`turn`) on top, and
//! no import cycles between modules. This reads the sources themselves, so a `use` that points
//! up (or sideways) fails here before review. See the codec section of `ARCHITECTURE.md`.

use std::path::Path;

/// Each top-level module and its layer. A module may use modules of lower layers only.
const LAYERS: &[(&str, u8)] = &[
    // Plain names: the closed kinds, which format a proposal came from.
    ("repair", 0),
    ("format_id", 0),
    ("words", 0),
    // The strict grammar's word rules, which the registry's grammar includes.
    ("strict_gbnf", 1),
    // The action space, and which format a chat template teaches (a format name from text).
    ("action", 1),
    ("chat_template", 1),
    // What decoders report, and the tool table.
    ("event", 2),
    ("registry", 2),
    // The contract between the scanner and the formats.
    ("format", 3),
    // Telling an echo of the help text from an action.
    ("echo", 3),
    // The formats.
    ("text", 4),
    ("native", 4),
    // Rendering (which shares the text decoder's word lists) and the driver.
    ("render", 5),
    ("turn", 5),
    // Accounting over decoded turns.
    ("score", 6),
];

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, l)| *l)
        .unwrap_or_else(|| panic!("module {module:?} has no layer in tests/layers.rs"))
}

/// Every `.rs` file under `dir`, with the top-level module it belongs to.
fn sources(dir: &Path, module: Option<&str>, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read codec/src").flatten() {
        let path = entry.path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let module = module.map_or(name, str::to_owned);
        if path.is_dir() {
            sources(&path, Some(&module), out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("source is UTF-8");
            out.push((module, text));
        }
    }
}

/// The top-level modules a source refers to through `crate::`, outside comments.
fn crate_refs(text: &str) -> Vec<String> {
    let mut refs = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(k) = rest.find("crate::") {
            rest = &rest[k + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                refs.push(name);
            }
        }
    }
    refs
}

#[test]
fn modules_only_use_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, None, &mut files);
    let mut problems = Vec::new();
    for (module, text) in &files {
        if module == "lib" {
            continue;
        }
        for dep in crate_refs(text) {
            if dep != *module && layer(&dep) >= layer(module) {
                problems.push(format!(
                    "{module} (layer {}) uses {dep} (layer {})",
                    layer(module),
                    layer(&dep)
                ));
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "imports that break the layering:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_module_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read lib.rs");
    for line in lib.lines() {
        if let Some(m) = line.strip_prefix("pub mod ") {
            layer(m.trim_end_matches(';'));
        }
    }
}
