//! The model flags `agent`, `eval --generate` and `tune` share, and loading the model from
//! them as `serve` does.

use models::{LlamaEngine, LoadOptions};

/// How the model is found and loaded, as for `serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// GGUF file or known model name (`smollm2`, `gemma3`, `tiny`, `qwen-coder-0.5b`,
    /// `qwen-coder-1.5b`), as for `serve`.
    #[arg(long, short = 'm', env = "BELLOWS_MODEL", value_name = "PATH|NAME")]
    pub model: Option<String>,
    /// Model profile (name or .toml path); default: selected by the GGUF.
    #[arg(long, env = "BELLOWS_PROFILE")]
    pub profile: Option<String>,
    /// Context size in tokens (of each attempt, when attempts run side by side); default: the
    /// profile's, else 4096.
    #[arg(long, env = "BELLOWS_CTX")]
    pub ctx: Option<u32>,
    /// CPU threads; default: all available cores.
    #[arg(long, env = "BELLOWS_THREADS")]
    pub threads: Option<u32>,
    /// Layers offloaded to the GPU (GPU builds only). Default: 0.
    #[arg(long, env = "BELLOWS_GPU_LAYERS", default_value_t = 0)]
    pub gpu_layers: u32,
    /// Flash attention (on, off, auto), as for `serve`. Default: auto.
    #[arg(
        long,
        env = "BELLOWS_FLASH_ATTN",
        value_name = "on|off|auto",
        default_value_t
    )]
    pub flash_attn: models::FlashAttn,
    /// KV cache key type (f16, q8_0, q4_0, …), as for `serve`. Default: f16.
    #[arg(
        long,
        env = "BELLOWS_CACHE_TYPE_K",
        value_name = "TYPE",
        default_value_t
    )]
    pub cache_type_k: models::CacheType,
    /// KV cache value type, as for `serve` (quantized needs flash attention). Default: f16.
    #[arg(
        long,
        env = "BELLOWS_CACHE_TYPE_V",
        value_name = "TYPE",
        default_value_t
    )]
    pub cache_type_v: models::CacheType,
}

impl ModelArgs {
    /// Loads `--model`, else the gateway's default model.
    pub fn load(&self) -> anyhow::Result<LlamaEngine> {
        self.load_or(None)
    }

    /// Loads `--model`, else `default` (a known name), else the gateway's default model.
    pub fn load_or(&self, default: Option<&str>) -> anyhow::Result<LlamaEngine> {
        self.load_with(default, 1)
    }

    /// As [`ModelArgs::load_or`], with `slots` sequences generating at once, each with a
    /// context of `--ctx` tokens.
    pub fn load_with(&self, default: Option<&str>, slots: u32) -> anyhow::Result<LlamaEngine> {
        let path = gateway::serve::resolve_model(self.model.as_deref().or(default))?;
        let mut opts = LoadOptions::new(path);
        opts.gpu_layers = self.gpu_layers;
        opts.attention = models::Attention {
            flash_attn: self.flash_attn,
            cache_type_k: self.cache_type_k,
            cache_type_v: self.cache_type_v,
        };
        opts.threads = self.threads;
        opts.n_ctx_seq = self.ctx;
        opts.slots = slots.max(1);
        opts.profile = self.profile.clone();
        Ok(LlamaEngine::load(opts)?)
    }
}
