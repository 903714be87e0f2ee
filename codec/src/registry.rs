//! The tool table as data. (Skeleton: the registry helper fills this in.)

use crate::action::Action;
use crate::event::{FailureKind, RepairKind};

/// Builtin tools plus client-declared ones.
#[derive(Debug, Clone, Default)]
pub struct Registry {}

impl Registry {
    /// The eleven builtin tools of DESIGN.md.
    pub fn builtin() -> Registry {
        Registry {}
    }

    /// True when `name` is a builtin or client tool.
    pub fn is_known(&self, _name: &str) -> bool {
        false
    }

    /// Turns a tool name and its JSON arguments into a validated [`Action`], with the repairs
    /// it took (argument aliases, say). Unknown tool and schema violations are failures.
    pub fn validate(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
    ) -> Result<(Action, Vec<RepairKind>), FailureKind> {
        Err(FailureKind::UnknownTool)
    }
}
