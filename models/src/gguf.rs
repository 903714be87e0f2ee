//! A GGUF header reader that checks a file *before* llama.cpp sees it.
//!
//! llama.cpp reports most bad files as a bare null pointer and aborts the process on some
//! (truncated tensor data, absurd counts), so the engine reads the header, the metadata and
//! the tensor table itself, checks that the file is long enough to hold every tensor, and
//! keeps the scalar metadata it needs (architecture, name, context length, chat template,
//! sliding window). Arrays (the vocabulary) are skipped, not stored.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// The GGUF magic, "GGUF" read as a little-endian u32.
const MAGIC: u32 = u32::from_le_bytes(*b"GGUF");
/// Caps that keep a hostile header from making us allocate or loop without bound.
const MAX_STRING: u64 = 64 << 20;
const MAX_COUNT: u64 = 1 << 24;
const MAX_DIMS: u32 = 8;

/// Why a file is not a usable GGUF.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("{path}: no such file")]
    NotFound { path: PathBuf },
    #[error("{path}: cannot read: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: not a GGUF file (the first bytes are not \"GGUF\")")]
    NotGguf { path: PathBuf },
    #[error("{path}: unsupported GGUF version {version} (2 and 3 are supported)")]
    UnsupportedVersion { path: PathBuf, version: u32 },
    #[error("{path}: truncated GGUF: {what} needs {needed} bytes but the file has {actual}")]
    Truncated {
        path: PathBuf,
        what: &'static str,
        needed: u64,
        actual: u64,
    },
    #[error("{path}: malformed GGUF at byte {offset}: {what}")]
    Malformed {
        path: PathBuf,
        offset: u64,
        what: &'static str,
    },
}

/// A scalar metadata value. Arrays are recorded by element count only.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    Array { len: u64 },
}

impl MetaValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            MetaValue::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }
}

/// What the header says about a GGUF file.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufInfo {
    pub path: PathBuf,
    pub version: u32,
    pub file_size: u64,
    pub tensor_count: u64,
    pub metadata: BTreeMap<String, MetaValue>,
}

impl GgufInfo {
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(MetaValue::as_str)
    }

    /// `general.architecture`, which every GGUF llama.cpp can load has.
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// `general.name`, if present.
    pub fn name(&self) -> Option<&str> {
        self.get_str("general.name")
    }

    /// `tokenizer.chat_template`, if present.
    pub fn chat_template(&self) -> Option<&str> {
        self.get_str("tokenizer.chat_template")
    }

    /// `{arch}.context_length`.
    pub fn context_length(&self) -> Option<u64> {
        let arch = self.architecture()?;
        self.metadata
            .get(&format!("{arch}.context_length"))
            .and_then(MetaValue::as_u64)
    }

    /// `{arch}.attention.sliding_window`: the window of sliding-window attention layers, if
    /// the model has any (Gemma 3 does).
    pub fn sliding_window(&self) -> Option<u64> {
        let arch = self.architecture()?;
        self.metadata
            .get(&format!("{arch}.attention.sliding_window"))
            .and_then(MetaValue::as_u64)
    }
}

/// Block size and bytes per block of the ggml tensor types, by type id. Types not listed are
/// still accepted; their size is bounded from below by their offset only.
fn ggml_type_size(ty: u32) -> Option<(u64, u64)> {
    Some(match ty {
        0 => (1, 4),      // F32
        1 => (1, 2),      // F16
        2 => (32, 18),    // Q4_0
        3 => (32, 20),    // Q4_1
        6 => (32, 22),    // Q5_0
        7 => (32, 24),    // Q5_1
        8 => (32, 34),    // Q8_0
        9 => (32, 36),    // Q8_1
        10 => (256, 84),  // Q2_K
        11 => (256, 110), // Q3_K
        12 => (256, 144), // Q4_K
        13 => (256, 176), // Q5_K
        14 => (256, 210), // Q6_K
        15 => (256, 292), // Q8_K
        20 => (32, 18),   // IQ4_NL
        23 => (256, 136), // IQ4_XS
        24 => (1, 1),     // I8
        25 => (1, 2),     // I16
        26 => (1, 4),     // I32
        27 => (1, 8),     // I64
        28 => (1, 8),     // F64
        30 => (1, 2),     // BF16
        _ => return None,
    })
}

struct Reader<'p> {
    inner: BufReader<File>,
    pos: u64,
    size: u64,
    path: &'p Path,
}

impl Reader<'_> {
    fn io(&self, source: io::Error) -> GgufError {
        GgufError::Io {
            path: self.path.to_owned(),
            source,
        }
    }

    fn malformed(&self, what: &'static str) -> GgufError {
        GgufError::Malformed {
            path: self.path.to_owned(),
            offset: self.pos,
            what,
        }
    }

    fn truncated(&self, what: &'static str, needed: u64) -> GgufError {
        GgufError::Truncated {
            path: self.path.to_owned(),
            what,
            needed,
            actual: self.size,
        }
    }

    fn bytes<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], GgufError> {
        if self.pos + N as u64 > self.size {
            return Err(self.truncated(what, self.pos + N as u64));
        }
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf).map_err(|e| self.io(e))?;
        self.pos += N as u64;
        Ok(buf)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, GgufError> {
        self.bytes::<4>(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, GgufError> {
        self.bytes::<8>(what).map(u64::from_le_bytes)
    }

    fn skip(&mut self, n: u64, what: &'static str) -> Result<(), GgufError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| self.malformed(what))?;
        if end > self.size {
            return Err(self.truncated(what, end));
        }
        let delta = i64::try_from(n).map_err(|_| self.malformed(what))?;
        self.inner.seek_relative(delta).map_err(|e| self.io(e))?;
        self.pos = end;
        Ok(())
    }

    fn string(&mut self, what: &'static str) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        if len > MAX_STRING {
            return Err(self.malformed("string length over 64 MiB"));
        }
        if self.pos + len > self.size {
            return Err(self.truncated(what, self.pos + len));
        }
        let mut buf = vec![0u8; len as usize];
        self.inner.read_exact(&mut buf).map_err(|e| self.io(e))?;
        self.pos += len;
        // Metadata strings are meant to be UTF-8; a stray byte should not reject the file.
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Reads one value of type `ty`; arrays are skipped element by element.
    fn value(&mut self, ty: u32, depth: u32) -> Result<MetaValue, GgufError> {
        const W: &str = "metadata value";
        Ok(match ty {
            0 => MetaValue::Int(self.bytes::<1>(W)?[0].into()),
            1 => MetaValue::Int(i8::from_le_bytes(self.bytes::<1>(W)?).into()),
            2 => MetaValue::Int(u16::from_le_bytes(self.bytes::<2>(W)?).into()),
            3 => MetaValue::Int(i16::from_le_bytes(self.bytes::<2>(W)?).into()),
            4 => MetaValue::Int(self.u32(W)?.into()),
            5 => MetaValue::Int(i32::from_le_bytes(self.bytes::<4>(W)?).into()),
            6 => MetaValue::Float(f32::from_le_bytes(self.bytes::<4>(W)?).into()),
            7 => MetaValue::Bool(self.bytes::<1>(W)?[0] != 0),
            8 => MetaValue::Str(self.string(W)?),
            9 => {
                if depth > 2 {
                    return Err(self.malformed("arrays nested too deeply"));
                }
                let elem = self.u32("array element type")?;
                let len = self.u64("array length")?;
                if len > MAX_COUNT * 4 {
                    return Err(self.malformed("array length out of range"));
                }
                match elem {
                    0 | 1 | 7 => self.skip(len, "array data")?,
                    2 | 3 => self.skip(len * 2, "array data")?,
                    4..=6 => self.skip(len * 4, "array data")?,
                    10..=12 => self.skip(len * 8, "array data")?,
                    8 | 9 => {
                        for _ in 0..len {
                            self.value(elem, depth + 1)?;
                        }
                    }
                    _ => return Err(self.malformed("unknown array element type")),
                }
                MetaValue::Array { len }
            }
            10 => MetaValue::Int(self.u64(W)?.into()),
            11 => MetaValue::Int(i64::from_le_bytes(self.bytes::<8>(W)?).into()),
            12 => MetaValue::Float(f64::from_le_bytes(self.bytes::<8>(W)?)),
            _ => return Err(self.malformed("unknown metadata value type")),
        })
    }
}

/// Reads and checks the GGUF at `path`: magic, version, metadata, tensor table, and that the
/// file holds every tensor's data.
pub fn inspect(path: &Path) -> Result<GgufInfo, GgufError> {
    let file = File::open(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => GgufError::NotFound {
            path: path.to_owned(),
        },
        _ => GgufError::Io {
            path: path.to_owned(),
            source,
        },
    })?;
    let meta = file.metadata().map_err(|source| GgufError::Io {
        path: path.to_owned(),
        source,
    })?;
    if meta.is_dir() {
        return Err(GgufError::Io {
            path: path.to_owned(),
            source: io::Error::other("is a directory"),
        });
    }
    let size = meta.len();
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 16, file),
        pos: 0,
        size,
        path,
    };

    if size < 4 {
        return Err(GgufError::NotGguf {
            path: path.to_owned(),
        });
    }
    if r.u32("magic")? != MAGIC {
        return Err(GgufError::NotGguf {
            path: path.to_owned(),
        });
    }
    let version = r.u32("version")?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::UnsupportedVersion {
            path: path.to_owned(),
            version,
        });
    }
    let tensor_count = r.u64("tensor count")?;
    let kv_count = r.u64("metadata count")?;
    if tensor_count > MAX_COUNT || kv_count > MAX_COUNT {
        return Err(r.malformed("tensor or metadata count out of range"));
    }

    let mut metadata = BTreeMap::new();
    for _ in 0..kv_count {
        let key = r.string("metadata key")?;
        let ty = r.u32("metadata type")?;
        let value = r.value(ty, 0)?;
        metadata.insert(key, value);
    }

    // The tensor table: the end of the data is at least the largest offset plus that
    // tensor's size.
    let mut data_needed: u64 = 0;
    for _ in 0..tensor_count {
        r.string("tensor name")?;
        let n_dims = r.u32("tensor dimension count")?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(r.malformed("tensor dimension count out of range"));
        }
        let mut elems: u64 = 1;
        for _ in 0..n_dims {
            let d = r.u64("tensor dimension")?;
            elems = elems
                .checked_mul(d)
                .ok_or_else(|| r.malformed("tensor size overflows"))?;
        }
        let ty = r.u32("tensor type")?;
        let offset = r.u64("tensor offset")?;
        let bytes = match ggml_type_size(ty) {
            Some((block, size)) => elems.div_ceil(block).saturating_mul(size),
            None => 1,
        };
        let end = offset
            .checked_add(bytes)
            .ok_or_else(|| r.malformed("tensor offset overflows"))?;
        data_needed = data_needed.max(end);
    }

    let alignment = metadata
        .get("general.alignment")
        .and_then(MetaValue::as_u64)
        .unwrap_or(32);
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(r.malformed("general.alignment is not a power of two"));
    }
    let data_start = r.pos.div_ceil(alignment) * alignment;
    let needed = data_start.saturating_add(data_needed);
    if needed > size {
        return Err(GgufError::Truncated {
            path: path.to_owned(),
            what: "tensor data",
            needed,
            actual: size,
        });
    }

    Ok(GgufInfo {
        path: path.to_owned(),
        version,
        file_size: size,
        tensor_count,
        metadata,
    })
}

/// Architectures the vendored llama.cpp knows (`LLM_ARCH_NAMES` in its `llama-arch.cpp`).
/// A GGUF naming any other is rejected with a typed error instead of llama.cpp's null model.
pub const SUPPORTED_ARCHITECTURES: &[&str] = &[
    "llama",
    "llama4",
    "deci",
    "falcon",
    "grok",
    "gpt2",
    "gptj",
    "gptneox",
    "mpt",
    "baichuan",
    "starcoder",
    "refact",
    "bert",
    "modern-bert",
    "nomic-bert",
    "nomic-bert-moe",
    "neo-bert",
    "jina-bert-v2",
    "jina-bert-v3",
    "eurobert",
    "bloom",
    "stablelm",
    "qwen",
    "qwen2",
    "qwen2moe",
    "qwen2vl",
    "qwen3",
    "qwen3moe",
    "qwen3next",
    "qwen3vl",
    "qwen3vlmoe",
    "qwen35",
    "qwen35moe",
    "clef",
    "qwen4exp",
    "phi2",
    "phi3",
    "phimoe",
    "plamo",
    "plamo2",
    "plamo3",
    "codeshell",
    "orion",
    "internlm2",
    "minicpm",
    "minicpm3",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3n",
    "gemma4",
    "gemma4-assistant",
    "gemma-embedding",
    "starcoder2",
    "mamba",
    "mamba2",
    "maple",
    "jamba",
    "falcon-h1",
    "xverse",
    "command-r",
    "cohere2",
    "cohere2moe",
    "dbrx",
    "olmo",
    "olmo2",
    "olmoe",
    "muse-glimmer",
    "openelm",
    "arctic",
    "deepseek",
    "deepseek2",
    "deepseek2-ocr",
    "deepseek32",
    "deepseek4",
    "chatglm",
    "glm4",
    "glm4moe",
    "glm-dsa",
    "bitnet",
    "t5",
    "t5encoder",
    "jais",
    "jais2",
    "nemotron",
    "nemotron_h",
    "nemotron_h_moe",
    "exaone",
    "exaone4",
    "exaone-moe",
    "rwkv6",
    "rwkv6qwen2",
    "rwkv7",
    "arwkv7",
    "granite",
    "granitemoe",
    "granitehybrid",
    "graniteswitch",
    "granite_swa",
    "chameleon",
    "wavtokenizer-dec",
    "plm",
    "bailingmoe",
    "bailingmoe2",
    "bailingmoe3",
    "dots1",
    "dots3note",
    "arcee",
    "afmoe",
    "laguna",
    "ernie4_5",
    "ernie4_5-moe",
    "hunyuan-moe",
    "hunyuan-dense",
    "hunyuan_vl",
    "hy_v3",
    "hy_v4",
    "smollm3",
    "gpt-oss",
    "lfm2",
    "lfm2moe",
    "dream",
    "smallthinker",
    "llada",
    "llada-moe",
    "seed_oss",
    "grovemoe",
    "apertus",
    "minimax-01",
    "hrm_text",
    "minimax-m2",
    "minimax-m3",
    "cogvlm",
    "rnd1",
    "pangu-embedded",
    "mistral3",
    "eagle3",
    "dflash",
    "mistral4",
    "paddleocr",
    "mimo2",
    "step35",
    "spark2_5",
    "llama-embed",
    "maincoder",
    "kimi-linear",
    "kimi-k3",
    "glm5-next",
    "talkie",
    "mellum",
    "nanbeige",
    "qwen3tts",
    "pockettts",
];
