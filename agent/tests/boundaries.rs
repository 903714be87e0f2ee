//! The loop knows neither HTTP nor llama.cpp (ARCHITECTURE.md): the manifest names no such
//! crate, and no source file names the llama.cpp engine.

#![allow(clippy::unwrap_used)]

#[test]
fn agent_depends_on_no_http_or_llama_crate() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{dir}/Cargo.toml")).unwrap();
    for banned in ["hyper", "llama-cpp", "http-body", "gateway"] {
        assert!(
            !manifest.contains(banned),
            "agent/Cargo.toml mentions {banned}"
        );
    }
    for entry in std::fs::read_dir(format!("{dir}/src")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for banned in ["LlamaEngine", "llama_cpp", "hyper::"] {
            assert!(!text.contains(banned), "{} names {banned}", path.display());
        }
    }
}
