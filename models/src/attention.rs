//! The attention settings llama-server exposes and a context is created with: flash attention
//! (`--flash-attn on|off|auto`) and the KV cache's element types (`--cache-type-k`,
//! `--cache-type-v`), under llama-server's names, checked before llama.cpp sees them.
//!
//! A quantized cache holds more tokens in the same memory (q8_0 about half of f16's); llama.cpp
//! reads a quantized V cache only through flash attention, and refuses the combination with a
//! null context and a log line. [`check`] says so first, in the user's words.

use std::fmt;
use std::str::FromStr;

use llama_cpp_2::context::params::KvCacheType;

/// When flash attention is used (llama.cpp's `flash_attn_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlashAttn {
    /// llama.cpp decides per model and device (its default).
    #[default]
    Auto,
    On,
    Off,
}

impl FlashAttn {
    pub const NAMES: &'static str = "on, off, auto";

    /// llama.h's `enum llama_flash_attn_type`: AUTO = -1, DISABLED = 0, ENABLED = 1.
    pub(crate) fn to_llama(self) -> std::os::raw::c_int {
        match self {
            FlashAttn::Auto => -1,
            FlashAttn::Off => 0,
            FlashAttn::On => 1,
        }
    }
}

impl FromStr for FlashAttn {
    type Err = String;

    /// llama-server's values (`on`, `off`, `auto`), and the booleans it once took.
    fn from_str(s: &str) -> Result<FlashAttn, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(FlashAttn::Auto),
            "on" | "true" | "1" | "enabled" => Ok(FlashAttn::On),
            "off" | "false" | "0" | "disabled" => Ok(FlashAttn::Off),
            other => Err(format!("'{other}' is not one of {}", FlashAttn::NAMES)),
        }
    }
}

impl fmt::Display for FlashAttn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlashAttn::Auto => "auto",
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
        })
    }
}

/// A KV cache element type, as llama-server's `--cache-type-k/-v` accept them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheType {
    F32,
    #[default]
    F16,
    Bf16,
    Q8_0,
    Q4_0,
    Q4_1,
    Iq4Nl,
    Q5_0,
    Q5_1,
}

impl CacheType {
    const ALL: [(CacheType, &'static str); 9] = [
        (CacheType::F32, "f32"),
        (CacheType::F16, "f16"),
        (CacheType::Bf16, "bf16"),
        (CacheType::Q8_0, "q8_0"),
        (CacheType::Q4_0, "q4_0"),
        (CacheType::Q4_1, "q4_1"),
        (CacheType::Iq4Nl, "iq4_nl"),
        (CacheType::Q5_0, "q5_0"),
        (CacheType::Q5_1, "q5_1"),
    ];
    pub const NAMES: &'static str = "f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1";

    /// A block-quantized type (every one but the float types).
    pub fn is_quantized(self) -> bool {
        !matches!(self, CacheType::F32 | CacheType::F16 | CacheType::Bf16)
    }

    pub(crate) fn to_llama(self) -> KvCacheType {
        match self {
            CacheType::F32 => KvCacheType::F32,
            CacheType::F16 => KvCacheType::F16,
            CacheType::Bf16 => KvCacheType::BF16,
            CacheType::Q8_0 => KvCacheType::Q8_0,
            CacheType::Q4_0 => KvCacheType::Q4_0,
            CacheType::Q4_1 => KvCacheType::Q4_1,
            CacheType::Iq4Nl => KvCacheType::IQ4_NL,
            CacheType::Q5_0 => KvCacheType::Q5_0,
            CacheType::Q5_1 => KvCacheType::Q5_1,
        }
    }
}

impl FromStr for CacheType {
    type Err = String;

    fn from_str(s: &str) -> Result<CacheType, String> {
        let want = s.trim().to_ascii_lowercase();
        CacheType::ALL
            .iter()
            .find(|(_, name)| *name == want)
            .map(|(t, _)| *t)
            .ok_or_else(|| format!("'{want}' is not one of {}", CacheType::NAMES))
    }
}

impl fmt::Display for CacheType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = CacheType::ALL
            .iter()
            .find(|(t, _)| t == self)
            .map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

/// The attention settings of one context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attention {
    pub flash_attn: FlashAttn,
    pub cache_type_k: CacheType,
    pub cache_type_v: CacheType,
}

impl Attention {
    /// True when every setting is llama.cpp's default (auto, f16, f16).
    pub fn is_default(&self) -> bool {
        *self == Attention::default()
    }
}

impl fmt::Display for Attention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--flash-attn {} --cache-type-k {} --cache-type-v {}",
            self.flash_attn, self.cache_type_k, self.cache_type_v
        )
    }
}

/// Refuses what llama.cpp would refuse for every model: a quantized V cache without flash
/// attention.
pub fn check(a: &Attention) -> Result<(), String> {
    if a.cache_type_v.is_quantized() && a.flash_attn == FlashAttn::Off {
        return Err(format!(
            "--cache-type-v {} needs flash attention (llama.cpp reads a quantized V cache only \
             through it): use --flash-attn on or auto, or --cache-type-v f16",
            a.cache_type_v
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_server_names_parse_and_print_back() {
        for (t, name) in CacheType::ALL {
            assert_eq!(name.parse::<CacheType>(), Ok(t));
            assert_eq!(t.to_string(), name);
            assert_eq!(name.to_ascii_uppercase().parse::<CacheType>(), Ok(t));
        }
        for (s, fa) in [
            ("on", FlashAttn::On),
            ("off", FlashAttn::Off),
            ("auto", FlashAttn::Auto),
            ("true", FlashAttn::On),
            ("0", FlashAttn::Off),
        ] {
            assert_eq!(s.parse::<FlashAttn>(), Ok(fa), "{s}");
        }
    }

    #[test]
    fn unknown_names_are_refused_with_the_accepted_ones() {
        let e = "q3_k".parse::<CacheType>().expect_err("not a cache type");
        assert!(
            e.contains("q3_k") && e.contains("q8_0") && e.contains("iq4_nl"),
            "{e}"
        );
        let e = "sometimes".parse::<FlashAttn>().expect_err("not a setting");
        assert!(e.contains("sometimes") && e.contains("auto"), "{e}");
    }

    #[test]
    fn only_the_float_types_are_unquantized() {
        let floats: Vec<_> = CacheType::ALL
            .iter()
            .filter(|(t, _)| !t.is_quantized())
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(floats, ["f32", "f16", "bf16"]);
    }

    #[test]
    fn a_quantized_v_cache_without_flash_attention_is_refused() {
        let mut a = Attention {
            flash_attn: FlashAttn::Off,
            cache_type_k: CacheType::Q8_0,
            cache_type_v: CacheType::F16,
        };
        // A quantized K alone is fine without flash attention.
        assert_eq!(check(&a), Ok(()));
        a.cache_type_v = CacheType::Q4_0;
        let e = check(&a).expect_err("quantized V without flash attention");
        assert!(
            e.contains("--cache-type-v q4_0") && e.contains("--flash-attn on or auto"),
            "{e}"
        );
        a.flash_attn = FlashAttn::Auto;
        assert_eq!(check(&a), Ok(()));
        a.flash_attn = FlashAttn::On;
        assert_eq!(check(&a), Ok(()));
    }

    #[test]
    fn the_default_is_llama_cpps() {
        let a = Attention::default();
        assert!(a.is_default());
        assert_eq!(
            a.to_string(),
            "--flash-attn auto --cache-type-k f16 --cache-type-v f16"
        );
        // llama.cpp's own default context parameters say auto.
        let params = llama_cpp_2::context::params::LlamaContextParams::default();
        assert_eq!(FlashAttn::Auto.to_llama(), params.flash_attention_policy());
    }
}
