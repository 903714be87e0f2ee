//! Every kind of bad model file or option gets a typed error that names the file and the
//! cause; none panics or aborts the process.

mod common;

use std::path::{Path, PathBuf};

use models::gguf::GgufError;
use models::{LlamaEngine, LoadError, LoadOptions};

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bellows-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    path
}

fn load(path: &Path) -> LoadError {
    let mut opts = LoadOptions::new(path);
    opts.n_ctx = Some(256);
    match LlamaEngine::load(opts) {
        Ok(e) => panic!("{} loaded: {e:?}", path.display()),
        Err(err) => {
            let msg = err.to_string();
            assert!(
                msg.contains(&path.display().to_string()),
                "the error names the file: {msg}"
            );
            err
        }
    }
}

#[test]
fn missing_file() {
    let path = std::env::temp_dir().join("bellows-no-such-model.gguf");
    assert!(matches!(
        load(&path),
        LoadError::Gguf(GgufError::NotFound { .. })
    ));
}

#[test]
fn not_a_gguf() {
    let path = scratch(
        "notes.gguf",
        b"these are not the weights you are looking for\n",
    );
    assert!(matches!(
        load(&path),
        LoadError::Gguf(GgufError::NotGguf { .. })
    ));
    let empty = scratch("empty.gguf", b"");
    assert!(matches!(
        load(&empty),
        LoadError::Gguf(GgufError::NotGguf { .. })
    ));
}

#[test]
fn a_directory() {
    let dir = std::env::temp_dir();
    assert!(matches!(load(&dir), LoadError::Gguf(GgufError::Io { .. })));
}

#[test]
fn unsupported_gguf_version() {
    let mut bytes = std::fs::read(common::tiny()).expect("read tiny");
    bytes[4..8].copy_from_slice(&99u32.to_le_bytes());
    let path = scratch("version99.gguf", &bytes);
    assert!(matches!(
        load(&path),
        LoadError::Gguf(GgufError::UnsupportedVersion { version: 99, .. })
    ));
}

#[test]
fn truncated_anywhere() {
    let bytes = std::fs::read(common::tiny()).expect("read tiny");
    // Cut in the header, in the metadata, in the tensor table and in the tensor data.
    for cut in [6, 30, 2000, bytes.len() / 2, bytes.len() - 1] {
        let path = scratch(&format!("truncated-{cut}.gguf"), &bytes[..cut]);
        match load(&path) {
            LoadError::Gguf(GgufError::Truncated { actual, needed, .. }) => {
                assert_eq!(actual, cut as u64);
                assert!(needed > actual);
            }
            other => panic!("cut at {cut}: {other}"),
        }
    }
}

#[test]
fn unsupported_architecture() {
    let mut bytes = std::fs::read(common::tiny()).expect("read tiny");
    let key = b"general.architecture";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("architecture key");
    // Key, then the value type (u32) and the string length (u64), then "llama".
    let value = at + key.len() + 4 + 8;
    assert_eq!(&bytes[value..value + 5], b"llama");
    bytes[value..value + 5].copy_from_slice(b"zlama");
    let path = scratch("zlama.gguf", &bytes);
    match load(&path) {
        LoadError::UnsupportedArchitecture { architecture, .. } => {
            assert_eq!(architecture, "zlama")
        }
        other => panic!("{other}"),
    }
}

#[test]
fn context_larger_than_the_model_was_trained_for() {
    let path = common::tiny();
    let mut opts = LoadOptions::new(&path);
    opts.n_ctx = Some(1 << 20);
    match LlamaEngine::load(opts) {
        Err(LoadError::ContextTooLarge {
            requested,
            n_ctx_train,
            ..
        }) => {
            assert_eq!(requested, 1 << 20);
            assert_eq!(n_ctx_train, 2048);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_options_and_profiles() {
    let mut opts = LoadOptions::new(common::tiny());
    opts.slots = 0;
    assert!(matches!(
        LlamaEngine::load(opts),
        Err(LoadError::InvalidOption(_))
    ));
    let mut opts = LoadOptions::new(common::tiny());
    opts.profile = Some("no-such-profile".to_owned());
    assert!(matches!(
        LlamaEngine::load(opts),
        Err(LoadError::Profile(models::ProfileError::Unknown { .. }))
    ));
}
