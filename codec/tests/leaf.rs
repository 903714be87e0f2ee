//! The codec crate is a leaf: it depends on nothing that runs (no async runtime, HTTP stack,
//! llama.cpp binding or metrics registry), so it can be fuzzed, benchmarked and tested alone.
//! This reads `codec/Cargo.toml` itself, so a forbidden dependency fails here before review.

/// Crates that run something (a runtime, a server, a model) or talk to the network.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "futures",
    "hyper",
    "hyper-util",
    "axum",
    "reqwest",
    "ureq",
    "rustls",
    "native-tls",
    "openssl",
    "llama-cpp-2",
    "llama-cpp-sys-2",
    "prometheus",
    "tracing-subscriber",
    "models",
    "gateway",
];

/// The dependency names declared in the `[dependencies]`-like tables of a manifest, including
/// target-specific ones, build-dependencies and `package = "…"` renames.
fn runtime_dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let table = line.trim_matches(['[', ']']);
            // `[dev-dependencies]` only builds tests; everything else ships with the crate.
            in_deps = (table.ends_with("dependencies") && !table.ends_with("dev-dependencies"))
                || table.contains("dependencies.") && !table.contains("dev-dependencies.");
            if in_deps && let Some((_, name)) = table.rsplit_once("dependencies.") {
                names.push(name.trim_matches('"').to_owned());
                in_deps = false;
            }
            continue;
        }
        if !in_deps || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            // `serde.workspace = true` declares `serde`.
            let key = key.trim().trim_matches('"');
            names.push(key.split('.').next().unwrap_or(key).to_owned());
            if let Some(pkg) = value
                .split("package")
                .nth(1)
                .and_then(|v| v.split('"').nth(1))
            {
                names.push(pkg.to_owned());
            }
        }
    }
    names
}

#[test]
fn codec_depends_on_no_runtime_crate() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let manifest = std::fs::read_to_string(&path).expect("read codec/Cargo.toml");
    let deps = runtime_dependencies(&manifest);
    assert!(
        deps.iter().any(|d| d == "serde_json"),
        "parser sanity: serde_json is found: {deps:?}"
    );
    for d in &deps {
        assert!(
            !FORBIDDEN.contains(&d.as_str()),
            "codec must stay a leaf, but depends on {d}"
        );
    }
}

#[test]
fn the_manifest_reader_sees_every_kind_of_dependency_table() {
    let manifest = r#"
[package]
name = "x"
[dependencies]
serde.workspace = true
rt = { package = "tokio", version = "1" }
[target.'cfg(unix)'.dependencies]
hyper = "1"
[build-dependencies.llama-cpp-sys-2]
version = "0.1"
[dev-dependencies]
proptest = "1"
"#;
    let deps = runtime_dependencies(manifest);
    for d in ["serde", "rt", "tokio", "hyper", "llama-cpp-sys-2"] {
        assert!(deps.iter().any(|x| x == d), "{d} not found in {deps:?}");
    }
    assert!(
        !deps.iter().any(|x| x == "proptest"),
        "dev-dependencies do not ship"
    );
}

/// The manifest check cannot see features: `jsonschema` with its default features would pull
/// in an HTTP client. `cargo tree` resolves the real normal-dependency graph of the crate.
#[test]
fn codec_dependency_graph_has_no_runtime_crate() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "codec",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"jsonschema"), "graph sanity: {crates:?}");
    for c in &crates {
        assert!(!FORBIDDEN.contains(c), "codec pulls in {c} transitively");
    }
}
