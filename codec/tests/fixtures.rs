//! Snapshot fixtures for the turn decoder.
//!
//! Layout: `codec/tests/fixtures/<mode>/<name>.in` holds one model reply; `<name>.expect` holds
//! its event trace as rendered by [`codec::turn::trace`]. `<mode>` is `auto` or a
//! `FormatId::as_str()` name (`text`, `hermes`, …). Every fixture is decoded whole, one char
//! at a time, and split in two at every char boundary; all traces must be identical (chunk
//! boundaries must not matter) and equal to the `.expect` file. Run with `UPDATE_EXPECT=1` to
//! write the `.expect` files, then review every changed one by eye. `FIXTURES=text/` (any
//! substring of the path) limits a run — and an update — to the matching fixtures, so one
//! helper's update never rewrites another's expectations.
//!
//! A fixture may declare client tools in `<name>.tools` beside it: a JSON list of
//! `{"name", "description", "parameters"}`. It is then decoded twice, with the builtin tools
//! plus those (`<name>.expect`) and with the builtin tools alone (`<name>.builtin.expect`), so
//! the pair shows what a call to the client tool becomes when nobody declared it. A fixture
//! with a `<name>.client.expect` beside its `.tools` (create it empty to opt in, then update)
//! is also decoded with a registry of those client tools only, as the gateway's native mode
//! and `bellows eval` build it for a request or corpus line that declares tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codec::format::{Detect, FormatId, Position};
use codec::registry::Registry;
use codec::turn::{Mode, TurnDecoder, formats_for, trace};

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

fn mode_of(dir: &str) -> Option<Mode> {
    if dir == "auto" {
        Some(Mode::Auto)
    } else {
        FormatId::parse(dir).map(Mode::Only)
    }
}

/// Every fixture: `(mode, path of the .in file)`, sorted for stable output.
fn fixtures() -> Vec<(Mode, PathBuf)> {
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(fixtures_root()) else {
        return out;
    };
    for dir in dirs.flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        let Some(mode) = mode_of(&name) else {
            panic!("fixture directory {name:?} is not `auto` or a format name");
        };
        let Ok(files) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "in") {
                out.push((mode, p));
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// The registries a fixture is decoded with, each with the file its trace is kept in.
fn registries(input: &Path) -> Vec<(Arc<Registry>, PathBuf)> {
    let builtin = Arc::new(Registry::builtin());
    let tools_path = input.with_extension("tools");
    let Ok(text) = std::fs::read_to_string(&tools_path) else {
        return vec![(builtin, input.with_extension("expect"))];
    };
    let tools: Vec<serde_json::Value> =
        serde_json::from_str(&text).expect("a .tools file is a JSON list");
    let with_tools = |mut reg: Registry| {
        for t in &tools {
            let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
            reg.add_client_tool(
                &field("name"),
                &field("description"),
                t["parameters"].clone(),
            )
            .unwrap_or_else(|e| panic!("{}: {e:?}", tools_path.display()));
        }
        Arc::new(reg)
    };
    let mut out = vec![
        (
            with_tools(Registry::builtin()),
            input.with_extension("expect"),
        ),
        (builtin, input.with_extension("builtin.expect")),
    ];
    let client = input.with_extension("client.expect");
    if client.exists() {
        out.push((with_tools(Registry::client_only()), client));
    }
    out
}

/// Decodes `parts` in order with a fresh decoder and renders the trace.
fn decode<'a>(mode: Mode, reg: &Arc<Registry>, parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut d = TurnDecoder::new(mode, Arc::clone(reg));
    let mut events = Vec::new();
    for p in parts {
        d.feed_into(p, &mut events);
    }
    d.finish_into(&mut events);
    trace(&events)
}

/// The trace of `input`, after checking that every chunking gives the same one.
fn check_chunking(mode: Mode, reg: &Arc<Registry>, input: &str) -> Result<String, String> {
    let whole = decode(mode, reg, [input]);
    let chars: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    let by_char = decode(mode, reg, chars.iter().copied());
    if by_char != whole {
        return Err(format!(
            "char-by-char trace differs:\n--- whole\n{whole}--- by char\n{by_char}"
        ));
    }
    for (k, _) in input.char_indices().skip(1) {
        let split = decode(mode, reg, [&input[..k], &input[k..]]);
        if split != whole {
            return Err(format!(
                "trace split at byte {k} differs:\n--- whole\n{whole}--- split\n{split}"
            ));
        }
    }
    Ok(whole)
}

#[test]
fn fixtures_match_their_expectations_under_every_chunking() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    // Under CI an update would rewrite the expectations instead of checking them.
    assert!(
        !(update && std::env::var_os("CI").is_some()),
        "UPDATE_EXPECT is set under CI: fixtures would be rewritten, not checked"
    );
    let filter = std::env::var("FIXTURES").unwrap_or_default();
    let all: Vec<(Mode, PathBuf)> = fixtures()
        .into_iter()
        .filter(|(_, p)| p.to_string_lossy().contains(filter.as_str()))
        .collect();
    assert!(
        !all.is_empty(),
        "no fixtures found under {}",
        fixtures_root().display()
    );
    let mut problems = Vec::new();
    for (mode, path) in &all {
        let input = std::fs::read_to_string(path).expect("fixture input is UTF-8");
        for (reg, expect_path) in registries(path) {
            let name = expect_path.display();
            let got = match check_chunking(*mode, &reg, &input) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(format!("{name}: {e}"));
                    continue;
                }
            };
            if update {
                std::fs::write(&expect_path, &got).expect("write .expect");
                continue;
            }
            match std::fs::read_to_string(&expect_path) {
                Ok(want) if want == got => {}
                Ok(want) => problems.push(format!("{name}:\n--- expected\n{want}--- got\n{got}")),
                Err(_) => problems.push(format!(
                    "{name}: no .expect file (run with UPDATE_EXPECT=1)\n{got}"
                )),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} fixtures failed:\n\n{}",
        problems.len(),
        all.len(),
        problems.join("\n\n")
    );
}

/// Formats' triggers are disjoint: at no position of any fixture do two formats both answer
/// `Start`, so detection never depends on the order formats are asked in.
#[test]
fn no_two_formats_start_at_the_same_position() {
    let formats = formats_for(Mode::Auto);
    let mut checked = 0usize;
    for (_, path) in fixtures() {
        // Every registry the fixture is decoded with: some triggers depend on the tools
        // declared, or on whether builtins exist.
        for (registry, _) in registries(&path) {
            let ctx = codec::format::Ctx {
                registry: &registry,
                next_index: 0,
                last_edit_path: None,
                auto: true,
                answered: false,
                attempted: false,
            };
            let input = std::fs::read_to_string(&path).expect("fixture input is UTF-8");
            for (i, _) in input.char_indices() {
                let line_start = i == 0 || input.as_bytes()[i - 1] == b'\n';
                for eos in [false, true] {
                    let reply_start = input[..i].trim().is_empty();
                    let at = Position {
                        line_start,
                        eos,
                        reply_start,
                    };
                    let starts: Vec<FormatId> = formats
                        .iter()
                        .filter(|f| matches!(f.detect(&input[i..], at, &ctx), Detect::Start(_)))
                        .map(|f| f.id())
                        .collect();
                    assert!(
                        starts.len() <= 1,
                        "{}: formats {starts:?} all start at byte {i} ({:?})",
                        path.display(),
                        &input[i..input.len().min(i + 40)]
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0);
}
