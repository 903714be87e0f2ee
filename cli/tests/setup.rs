//! The set-up a newcomer runs: GPU features reach llama.cpp, and the prerequisite check finds
//! what bindgen really loads.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ sits in the repository root")
        .to_owned()
}

/// `cargo build -p cli --features F` (what the README says for a GPU build) turns on
/// llama-cpp-2's feature F, for each GPU back end.
#[test]
fn gpu_features_of_the_binary_reach_llama_cpp() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for feature in ["cuda", "vulkan", "metal"] {
        let out = Command::new(&cargo)
            .current_dir(repo_root())
            .args(["tree", "-p", "cli", "--features", feature])
            .args(["-e", "features", "-i", "llama-cpp-2", "--prefix", "none"])
            .output()
            .expect("cargo runs");
        let tree = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "cargo tree failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let wanted = format!("llama-cpp-2 feature \"{feature}\"");
        assert!(
            tree.lines().any(|l| l.trim() == wanted),
            "--features {feature} on cli does not enable {wanted}:\n{tree}"
        );
    }
}

fn prereqs_check(lib_dir: &Path) -> String {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/prereqs.sh"))
        .arg("--check")
        .env("PREREQS_LIB_DIRS", lib_dir)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// An image that carries only `libclang-cpp.so.14` (package libclang-cpp14) has no libclang
/// for bindgen: prereqs must say libclang-dev is missing. Each real libclang file name counts.
#[test]
fn prereqs_tells_libclang_cpp_from_libclang() {
    let dir = std::env::temp_dir().join(format!("bellows-prereqs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("libclang-cpp.so.14"), b"").expect("write");
    assert_eq!(prereqs_check(&dir), "libclang-dev");
    for real in ["libclang.so", "libclang-14.so.1", "libclang.so.14"] {
        let one = dir.join(real);
        std::fs::write(&one, b"").expect("write");
        assert_eq!(
            prereqs_check(&dir),
            "",
            "{real} is a libclang bindgen loads"
        );
        std::fs::remove_file(&one).expect("remove");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
