//! What `--write` puts into a profile: the chosen configuration's settings and its
//! `[measured]` figures, rewritten into the TOML with toml_edit so comments stay.

use models::profile::Measured;
use serde_json::Value;

use super::date::today;
use super::sweep::SweepResult;
use crate::measure::Config;

/// The `[measured]` table for the chosen configuration.
pub fn measured(result: &SweepResult, prompts: &str, prompts_sha256: &str) -> Measured {
    let f = &result.best().figures;
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Measured {
        conversion_rate: Some(round(f.conversion_rate())),
        valid_action_rate: Some(round(f.valid_action_rate())),
        right_action_rate: Some(round(f.right_action_rate())),
        exact_action_rate: Some(round(f.exact_action_rate())),
        auto_tool_call_rate: f.auto_tool_call_rate().map(round),
        echo_decodes: Some(u64::from(f.echoes)),
        tokens_per_action: f.tokens_per_action().map(|t| (t * 10.0).round() / 10.0),
        tokens_per_second: Some((f.tokens_per_second() * 10.0).round() / 10.0),
        replies: Some(u64::from(f.replies)),
        configuration: Some(result.best().config.key()),
        prompts: Some(prompts.to_owned()),
        prompts_sha256: Some(prompts_sha256.to_owned()),
        date: Some(today()),
        bellows_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        // The agent bench's figures are not tuning's: [`write_profile`] keeps the profile's.
        ..Measured::default()
    }
}

/// Rewrites profile TOML `text` with `config`'s settings and `measured`, keeping everything
/// else (comments included) as it was.
pub fn write_profile(
    text: &str,
    config: &Config,
    measured: &Measured,
) -> Result<String, toml_edit::TomlError> {
    // The placeholder comment of an unmeasured profile goes: the table replaces it.
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("# [measured] is filled in by profile tuning"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    let table = |doc: &mut toml_edit::DocumentMut, name: &str| {
        if !doc.contains_table(name) {
            doc[name] = toml_edit::table();
        }
    };
    table(&mut doc, "generation");
    let g = &mut doc["generation"];
    g["protocol"] = toml_edit::value(config.protocol.as_str());
    g["prompt"] = toml_edit::value(config.prompt.as_str());
    g["grammar"] = toml_edit::value(config.grammar.as_str());
    g["actions_per_turn"] = toml_edit::value(i64::from(config.actions_per_turn));
    g["tools"] = toml_edit::value(config.tools.as_str());
    if let Some(t) = config.temperature {
        table(&mut doc, "sampling");
        // Through f64's shortest form of the f32, so 0.3 is written as 0.3.
        let t: f64 = format!("{t}").parse().unwrap_or(f64::from(t));
        doc["sampling"]["temperature"] = toml_edit::value(t);
    }
    let mut m = toml_edit::Table::new();
    m.decor_mut().set_prefix(
        "\n# Written by `bellows tune --write`: the chosen configuration's figures on the\n\
         # prompt set named here (see models/profiles/README.md).\n",
    );
    let v = serde_json::to_value(measured).unwrap_or(Value::Null);
    if let Value::Object(fields) = v {
        for (k, v) in fields {
            let item = match v {
                Value::Null => continue,
                Value::Bool(b) => toml_edit::value(b),
                Value::Number(n) => match n.as_i64() {
                    Some(i) if !n.is_f64() => toml_edit::value(i),
                    _ => toml_edit::value(n.as_f64().unwrap_or_default()),
                },
                Value::String(s) => toml_edit::value(s),
                other => toml_edit::value(other.to_string()),
            };
            m.insert(&k, item);
        }
    }
    // The agent bench's figures (`agent_*`, written by hand from benches/README.md) are not
    // tuning's to replace: they stay, after the new figures.
    if let Some(old) = doc.get("measured").and_then(toml_edit::Item::as_table) {
        for (k, v) in old.iter() {
            if k.starts_with("agent_") && !m.contains_key(k) {
                m.insert(k, v.clone());
            }
        }
    }
    doc.remove("measured");
    doc.insert("measured", toml_edit::Item::Table(m));
    Ok(doc.to_string())
}
