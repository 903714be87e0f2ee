//! RUN's sandbox: the kernel, not the agent, confines what a command the model wrote may touch.
//!
//! On Linux with Landlock, a command runs under a ruleset that allows reading and executing
//! everywhere but writing only beneath the repository root, the command's private temp dir
//! and a few character devices (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty`); TCP bind
//! and connect are denied unless `allow_net` (Landlock ABI 4 and later); signals and abstract
//! unix sockets are scoped to the command (ABI 6 and later); and no new privileges (setuid)
//! can be gained. Where the kernel lacks Landlock, RUN is refused unless the user opted into
//! [`Confinement::Unconfined`].
//!
//! Landlock has no deny rules, so `.git/` and `.bellows/`, which sit inside the repository,
//! are writable by a command even though the agent's own file actions never touch them; the
//! parts of `.git/` that git executes later are put back after each command
//! (`crate::guard`), and undo validates every journal record it reads.
//!
//! The workspace forbids `unsafe`, so there is no `pre_exec` hook: a Landlock ruleset (and
//! `no_new_privs`) binds the thread that calls `landlock_restrict_self` and every process it
//! starts afterwards, so [`spawn_confined`] restricts a short-lived thread of its own, starts
//! the command from it and hands the `Child` back; the agent's other threads stay unrestricted.

use std::fmt;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::OnceLock;

/// The character devices a confined command may open for writing (file rights only, no
/// directory beneath them); those missing on this system are skipped.
pub const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Why the kernel cannot confine commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// Landlock is built in but not enabled at boot.
    NotEnabled,
    /// Landlock is not built into this kernel (or this is not Linux).
    NotImplemented,
    /// Landlock answered, but restricting a thread failed (a seccomp filter refusing its
    /// system calls, for instance).
    ProbeFailed,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unavailable::NotEnabled => {
                "not enabled at boot; add `landlock` to the `lsm=` kernel parameter"
            }
            Unavailable::NotImplemented => "not built into this kernel",
            Unavailable::ProbeFailed => "restricting a thread failed",
        })
    }
}

/// What the running kernel offers, as [`probe`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Landlock works. `abi` is the ABI version in use: the kernel's, capped at the newest
    /// the `landlock` crate knows.
    Landlock {
        abi: u32,
    },
    Unavailable(Unavailable),
}

impl Support {
    /// Whether a ruleset can deny TCP bind and connect (ABI 4).
    pub fn confines_tcp(self) -> bool {
        matches!(self, Support::Landlock { abi } if abi >= 4)
    }

    /// Whether a ruleset can scope signals and abstract unix sockets (ABI 6).
    pub fn scopes_signals(self) -> bool {
        matches!(self, Support::Landlock { abi } if abi >= 6)
    }
}

/// Whether Landlock works on this kernel: a throwaway thread restricts itself with a ruleset
/// that takes nothing away, and the kernel's answer gives the ABI version. Probed once per
/// process (the kernel does not change under it).
pub fn probe() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(imp::probe)
}

/// How RUN's commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// A Landlock ruleset (see the module documentation); `allow_net` leaves TCP alone
    /// (`--allow-net`).
    Landlock { allow_net: bool },
    /// No confinement: commands can do whatever the user can. Only by explicit opt-in
    /// (`--unsandboxed-run`).
    Unconfined,
    /// The kernel cannot confine commands and nobody opted out: every RUN is refused.
    Refused(Unavailable),
}

impl Confinement {
    /// Landlock when `support` has it; otherwise [`Confinement::Unconfined`] when the user
    /// opted in with `unsandboxed`, else [`Confinement::Refused`]. `unsandboxed` never
    /// lifts a sandbox the kernel can provide.
    pub fn choose(support: Support, allow_net: bool, unsandboxed: bool) -> Confinement {
        match support {
            Support::Landlock { .. } => Confinement::Landlock { allow_net },
            Support::Unavailable(_) if unsandboxed => Confinement::Unconfined,
            Support::Unavailable(why) => Confinement::Refused(why),
        }
    }

    /// [`Confinement::choose`] for this kernel.
    pub fn for_kernel(allow_net: bool, unsandboxed: bool) -> Confinement {
        Confinement::choose(probe(), allow_net, unsandboxed)
    }

    /// One line saying what is enforced on commands run in `root`, given `support`.
    pub fn report(self, root: &Path, support: Support) -> String {
        match (self, support) {
            (Confinement::Landlock { allow_net }, Support::Landlock { abi }) => {
                let mut parts = vec![format!(
                    "RUN sandbox: Landlock ABI {abi}; writes only beneath {} (.git/ and \
                     .bellows/ included), a private temp dir per command and {}",
                    root.display(),
                    WRITABLE_DEVICES.join(", ")
                )];
                parts.push(if allow_net {
                    "network allowed (--allow-net)".to_owned()
                } else if support.confines_tcp() {
                    "network: TCP bind and connect denied (UDP and pathname unix sockets not confined)"
                        .to_owned()
                } else {
                    format!("network not confined (Landlock ABI {abi} < 4 has no TCP rules)")
                });
                parts.push(if support.scopes_signals() {
                    "signals and abstract unix sockets scoped to the command".to_owned()
                } else {
                    format!("signals not scoped (Landlock ABI {abi} < 6)")
                });
                parts.push("no new privileges".to_owned());
                parts.join("; ")
            }
            (Confinement::Landlock { .. }, Support::Unavailable(why)) => format!(
                "RUN sandbox: Landlock requested but unavailable ({why}): every RUN is refused"
            ),
            (Confinement::Unconfined, _) => "RUN sandbox: none (--unsandboxed-run): commands \
                 run unconfined and can write anywhere you can and use the network"
                .to_owned(),
            (Confinement::Refused(why), _) => refusal(why),
        }
    }
}

impl Default for Confinement {
    /// Landlock (network off) when this kernel has it, else refused.
    fn default() -> Confinement {
        Confinement::for_kernel(false, false)
    }
}

/// What RUN says when the kernel cannot confine it.
pub fn refusal(why: Unavailable) -> String {
    format!(
        "this kernel cannot confine commands (Landlock unavailable: {why}): RUN is refused; \
         pass --unsandboxed-run to run them unconfined"
    )
}

/// Why a confined command was not started.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[cfg(target_os = "linux")]
    #[error("building the Landlock ruleset failed: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("Landlock enforced nothing on this kernel")]
    NotEnforced,
    #[error("the kernel did not set no_new_privs")]
    NoNewPrivs,
    #[error("the sandbox thread ended without starting the command")]
    Thread,
}

/// Starts `cmd` under Landlock: a dedicated thread restricts itself (writes only beneath
/// `writable` and [`WRITABLE_DEVICES`]; TCP denied unless `allow_net`; signals scoped), spawns
/// the command, which inherits the restriction, and ends. The outer error means nothing was
/// started because the sandbox could not be set up; the inner one is the spawn's own.
pub fn spawn_confined(
    cmd: &mut Command,
    allow_net: bool,
    writable: &[&Path],
) -> Result<std::io::Result<Child>, SandboxError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            imp::restrict_this_thread(writable, allow_net)?;
            Ok(cmd.spawn())
        })
        .join()
        .unwrap_or(Err(SandboxError::Thread))
    })
}

#[cfg(target_os = "linux")]
mod imp {
    use std::path::Path;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, LandlockStatus, RestrictionStatus, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, path_beneath_rules,
    };

    use super::{SandboxError, Support, Unavailable, WRITABLE_DEVICES};

    /// The ABI whose rights are requested (best effort: a kernel with an older ABI enforces
    /// what it has). Newer rights are never requested implicitly, so a newer kernel behaves
    /// as tested.
    const TARGET: ABI = ABI::V6;

    pub(super) fn probe() -> Support {
        let restricted = std::thread::spawn(|| -> Result<RestrictionStatus, RulesetError> {
            // Handles execution and allows it everywhere: the thread loses nothing.
            Ruleset::default()
                .handle_access(AccessFs::Execute)?
                .create()?
                .add_rules(path_beneath_rules(["/"], AccessFs::Execute))?
                .restrict_self()
        })
        .join();
        let Ok(Ok(status)) = restricted else {
            return Support::Unavailable(Unavailable::ProbeFailed);
        };
        match status.landlock {
            LandlockStatus::NotEnabled => Support::Unavailable(Unavailable::NotEnabled),
            LandlockStatus::NotImplemented => Support::Unavailable(Unavailable::NotImplemented),
            LandlockStatus::Available { effective_abi, .. }
                if status.ruleset != RulesetStatus::NotEnforced =>
            {
                // `ABI` displays as its version number.
                match effective_abi.to_string().parse() {
                    Ok(abi) => Support::Landlock { abi },
                    Err(_) => Support::Unavailable(Unavailable::ProbeFailed),
                }
            }
            _ => Support::Unavailable(Unavailable::ProbeFailed),
        }
    }

    pub(super) fn restrict_this_thread(
        writable: &[&Path],
        allow_net: bool,
    ) -> Result<(), SandboxError> {
        let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(TARGET))?;
        if !allow_net {
            // Handled with no rule allowing any port: both are denied.
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        let status = ruleset
            .scope(Scope::from_all(TARGET))?
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET)))?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(TARGET)))?
            .add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_file(TARGET),
            ))?
            .restrict_self()?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(SandboxError::NotEnforced);
        }
        if !status.no_new_privs {
            return Err(SandboxError::NoNewPrivs);
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::{SandboxError, Support, Unavailable};

    pub(super) fn probe() -> Support {
        Support::Unavailable(Unavailable::NotImplemented)
    }

    pub(super) fn restrict_this_thread(
        _writable: &[&Path],
        _allow_net: bool,
    ) -> Result<(), SandboxError> {
        Err(SandboxError::NotEnforced)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_unsandboxed_opt_in_never_lifts_a_sandbox_the_kernel_provides() {
        let landlock = Support::Landlock { abi: 6 };
        let none = Support::Unavailable(Unavailable::NotEnabled);
        assert_eq!(
            Confinement::choose(landlock, true, true),
            Confinement::Landlock { allow_net: true }
        );
        assert_eq!(
            Confinement::choose(none, false, true),
            Confinement::Unconfined
        );
        assert_eq!(
            Confinement::choose(none, true, false),
            Confinement::Refused(Unavailable::NotEnabled)
        );
    }

    #[test]
    fn the_report_says_what_the_abi_enforces() {
        let root = Path::new("/r");
        let on = Confinement::Landlock { allow_net: false };
        let abi3 = on.report(root, Support::Landlock { abi: 3 });
        assert!(abi3.contains("beneath /r"), "{abi3}");
        assert!(abi3.contains("network not confined"), "{abi3}");
        assert!(abi3.contains("signals not scoped"), "{abi3}");
        let abi6 = on.report(root, Support::Landlock { abi: 6 });
        assert!(abi6.contains("TCP bind and connect denied"), "{abi6}");
        assert!(
            abi6.contains("signals and abstract unix sockets scoped"),
            "{abi6}"
        );
        let net =
            Confinement::Landlock { allow_net: true }.report(root, Support::Landlock { abi: 6 });
        assert!(net.contains("network allowed"), "{net}");
        let gone = on.report(root, Support::Unavailable(Unavailable::NotImplemented));
        assert!(gone.contains("every RUN is refused"), "{gone}");
        let refused = Confinement::Refused(Unavailable::NotImplemented)
            .report(root, Support::Landlock { abi: 6 });
        assert!(refused.contains("pass --unsandboxed-run"), "{refused}");
        assert!(
            Confinement::Unconfined
                .report(root, Support::Landlock { abi: 6 })
                .contains("unconfined")
        );
    }
}
