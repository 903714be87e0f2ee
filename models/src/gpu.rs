//! What `--gpu-layers` does on this binary and this machine: the devices llama.cpp's back ends
//! found, and whether the layers asked for can go anywhere but the CPU.
//!
//! llama.cpp quietly keeps every layer on the CPU when the binary was built without a GPU back
//! end, or when its back end finds no device; a user who asked for `--gpu-layers 99` then sees
//! CPU speed and no reason. [`Offload::plan`] names which case holds, and the loader logs it.

use std::fmt;

/// One device a llama.cpp back end reports (`ggml_backend_dev_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// The back end's name: `CPU`, `CUDA`, `Vulkan`, `Metal`, …
    pub backend: String,
    /// The device's name in that back end (`Vulkan0`, `CUDA0`).
    pub name: String,
    /// What the driver calls it (`NVIDIA GeForce RTX 4060`, `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub description: String,
    /// Total memory in bytes (0 where the back end does not say).
    pub memory_total: usize,
    /// A GPU, discrete or integrated: somewhere layers can be offloaded to (the CPU and
    /// accelerators such as BLAS are not).
    pub gpu: bool,
}

impl Device {
    /// Somewhere `--gpu-layers` can put layers.
    pub fn is_offload_target(&self) -> bool {
        self.gpu
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.name, self.description)?;
        if self.memory_total > 0 {
            write!(
                f,
                ", {:.1} GiB",
                self.memory_total as f64 / (1u64 << 30) as f64
            )?;
        }
        write!(f, ")")
    }
}

/// Where the model's layers go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offload {
    /// `--gpu-layers 0`: every layer on the CPU, as asked.
    CpuOnly,
    /// Layers asked for, but this binary has no GPU back end (built without `cuda`, `vulkan`
    /// or `metal`): they stay on the CPU.
    NoBackend { layers: u32 },
    /// Layers asked for, a GPU back end built in, but no device found (no driver, no card, or
    /// the device hidden): they stay on the CPU.
    NoDevice {
        layers: u32,
        backends: Vec<&'static str>,
    },
    /// Up to `layers` layers offloaded to these devices.
    Devices { layers: u32, devices: Vec<Device> },
}

impl Offload {
    /// The plan for `layers` layers, given the GPU back ends built into the binary
    /// ([`BUILT_BACKENDS`]) and the devices they report.
    pub fn plan(layers: u32, backends: &[&'static str], devices: &[Device]) -> Offload {
        if layers == 0 {
            return Offload::CpuOnly;
        }
        if backends.is_empty() {
            return Offload::NoBackend { layers };
        }
        let targets: Vec<Device> = devices
            .iter()
            .filter(|d| d.is_offload_target())
            .cloned()
            .collect();
        if targets.is_empty() {
            Offload::NoDevice {
                layers,
                backends: backends.to_vec(),
            }
        } else {
            Offload::Devices {
                layers,
                devices: targets,
            }
        }
    }

    /// Why layers asked for stay on the CPU (a sentence starting in lower case), if they do.
    pub fn why_cpu(&self) -> Option<String> {
        match self {
            Offload::NoBackend { .. } => Some(
                "this binary has no GPU back end: every layer stays on the CPU (build with \
                 `cargo build --release -p cli --features cuda`, or vulkan, or metal)"
                    .to_owned(),
            ),
            Offload::NoDevice { backends, .. } => Some(format!(
                "the {} back end found no device (no driver or card visible to this process): \
                 every layer stays on the CPU",
                backends.join(" and ")
            )),
            Offload::CpuOnly | Offload::Devices { .. } => None,
        }
    }

    /// True when layers were asked for and none can leave the CPU: worth a warning.
    pub fn is_unmet(&self) -> bool {
        matches!(self, Offload::NoBackend { .. } | Offload::NoDevice { .. })
    }

    /// True when every layer, and so every layer's attention, runs on the CPU.
    pub fn all_on_cpu(&self) -> bool {
        !matches!(self, Offload::Devices { .. })
    }
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Offload::CpuOnly => write!(f, "every layer on the CPU (--gpu-layers 0)"),
            Offload::NoBackend { layers } | Offload::NoDevice { layers, .. } => write!(
                f,
                "--gpu-layers {layers} asked for, but {}",
                self.why_cpu().unwrap_or_default()
            ),
            Offload::Devices { layers, devices } => {
                write!(f, "up to {layers} layers offloaded to ")?;
                for (i, d) in devices.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{d}")?;
                }
                Ok(())
            }
        }
    }
}

/// The GPU back ends built into this binary (its cargo features).
pub const BUILT_BACKENDS: &[&str] = &[
    #[cfg(feature = "cuda")]
    "CUDA",
    #[cfg(feature = "vulkan")]
    "Vulkan",
    #[cfg(feature = "metal")]
    "Metal",
];

/// The devices llama.cpp's back ends report in this process (the CPU's included); call
/// [`crate::llama::backend`] first.
pub fn devices() -> Vec<Device> {
    llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .map(|d| Device {
            backend: d.backend,
            name: d.name,
            description: d.description,
            memory_total: d.memory_total,
            gpu: matches!(
                d.device_type,
                llama_cpp_2::LlamaBackendDeviceType::Gpu
                    | llama_cpp_2::LlamaBackendDeviceType::IntegratedGpu
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(backend: &str, name: &str) -> Device {
        Device {
            backend: backend.into(),
            name: name.into(),
            description: format!("{name} card"),
            memory_total: 8 << 30,
            gpu: backend != "CPU",
        }
    }

    #[test]
    fn no_layers_asked_is_cpu_only_whatever_the_devices() {
        let all = [dev("CPU", "CPU"), dev("CUDA", "CUDA0")];
        assert_eq!(Offload::plan(0, &["CUDA"], &all), Offload::CpuOnly);
        assert!(!Offload::plan(0, &[], &[]).is_unmet());
        assert!(Offload::plan(0, &["CUDA"], &all).all_on_cpu());
    }

    #[test]
    fn layers_on_a_cpu_build_are_unmet_and_say_how_to_build() {
        let plan = Offload::plan(99, &[], &[dev("CPU", "CPU")]);
        assert_eq!(plan, Offload::NoBackend { layers: 99 });
        assert!(plan.is_unmet());
        assert!(plan.all_on_cpu());
        let text = plan.to_string();
        assert!(text.contains("--gpu-layers 99"), "{text}");
        assert!(text.contains("--features cuda"), "{text}");
    }

    #[test]
    fn a_gpu_build_with_only_the_cpu_device_found_no_device() {
        let plan = Offload::plan(20, &["Vulkan"], &[dev("CPU", "CPU")]);
        assert_eq!(
            plan,
            Offload::NoDevice {
                layers: 20,
                backends: vec!["Vulkan"]
            }
        );
        assert!(plan.is_unmet());
        assert!(
            plan.to_string()
                .contains("the Vulkan back end found no device"),
            "{plan}"
        );
    }

    #[test]
    fn devices_other_than_the_cpu_are_the_targets_and_are_named() {
        let plan = Offload::plan(
            99,
            &["Vulkan"],
            &[
                dev("CPU", "CPU"),
                dev("Vulkan", "Vulkan0"),
                dev("BLAS", "BLAS"),
            ]
            .map(|mut d| {
                d.gpu &= d.backend != "BLAS";
                d
            }),
        );
        match &plan {
            Offload::Devices { layers, devices } => {
                assert_eq!(*layers, 99);
                assert_eq!(devices.len(), 1);
                assert_eq!(devices[0].name, "Vulkan0");
            }
            other => panic!("expected devices, got {other:?}"),
        }
        assert!(!plan.is_unmet());
        assert!(!plan.all_on_cpu());
        assert_eq!(
            plan.to_string(),
            "up to 99 layers offloaded to Vulkan0 (Vulkan0 card, 8.0 GiB)"
        );
    }
}

#[cfg(test)]
mod built {
    use super::*;

    /// The features this crate was built with are the back ends named: a CPU build (the test
    /// suite's) names none, so `--gpu-layers` there is `NoBackend`.
    #[test]
    fn built_backends_follow_the_features() {
        assert_eq!(BUILT_BACKENDS.contains(&"CUDA"), cfg!(feature = "cuda"));
        assert_eq!(BUILT_BACKENDS.contains(&"Vulkan"), cfg!(feature = "vulkan"));
        assert_eq!(BUILT_BACKENDS.contains(&"Metal"), cfg!(feature = "metal"));
    }
}
