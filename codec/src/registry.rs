//! The tool table as data, and everything generated from it.
//!
//! [`BUILTINS`] is the one table of the eleven builtin tools: for each, its native name, its
//! text-protocol verb and verb-line syntax, the one-line hint the system prompt shows, the
//! description native mode offers, and its arguments with their types. The system prompt
//! ([`Registry::system_prompt`]), the native JSON schemas ([`Registry::tool_schemas`]), the GBNF
//! grammar of the text protocol ([`Registry::text_protocol_gbnf`]) and argument validation
//! ([`Registry::validate`]) are all derived from it, so no tool can exist in one and not another.
//!
//! Client-declared tools (name + description + JSON schema, from an OpenAI `tools` request)
//! are first-class: [`Registry::add_client_tool`] accepts them at run time, and their arguments
//! are checked against their schema by the `jsonschema` crate.
//!
//! Parsing verb lines is the text decoder's job (`crate::text`): deciding whether a line is an
//! action or prose needs more than the table. The renderer (`crate::render`) writes the one
//! spelling of each action that it reads back.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::action::{Action, Block, GoldError};
use crate::repair::{FailureKind, RepairKind};

/// The JSON type of one builtin argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// A string on one line (a path, a pattern, a summary).
    String,
    /// A string of whole lines, each ending in `\n` (file content, block bodies).
    Lines,
    /// A non-negative integer (a 1-based line number).
    Integer,
    /// An array of strings (`run.argv`).
    StringArray,
    /// An array of `{search, replace}` objects (`edit.blocks`).
    Blocks,
}

/// One argument of a builtin tool.
#[derive(Debug, Clone, Copy)]
pub struct ArgSpec {
    pub name: &'static str,
    pub ty: ArgType,
    pub required: bool,
    /// The description native mode offers for this argument.
    pub description: &'static str,
    /// Other names small models use for this argument, accepted with an `argument_alias`
    /// repair. Each is listed only where it cannot mean anything else for this tool.
    pub aliases: &'static [&'static str],
}

/// One builtin tool: one row of the table.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The native tool name (`read`), also the `name` of the JSON form.
    pub name: &'static str,
    /// The text-protocol verb (`READ`).
    pub verb: &'static str,
    /// The verb line as the system prompt teaches it (`READ path[:start-end]`).
    pub syntax: &'static str,
    /// The short hint after the syntax in the system prompt.
    pub hint: &'static str,
    /// The one-line description offered in native mode.
    pub description: &'static str,
    /// Arguments in spec order: the order of keys in the JSON form.
    pub args: &'static [ArgSpec],
}

impl ToolSpec {
    /// The argument called `name`, if the tool has one.
    pub fn arg(&self, name: &str) -> Option<&'static ArgSpec> {
        self.args.iter().find(|a| a.name == name)
    }
}

const PATH_ALIASES: &[&str] = &["file_path", "filepath", "filename", "file"];
const DIR_ALIASES: &[&str] = &["dir", "directory", "dir_path", "directory_path"];

const fn arg(
    name: &'static str,
    ty: ArgType,
    required: bool,
    description: &'static str,
    aliases: &'static [&'static str],
) -> ArgSpec {
    ArgSpec {
        name,
        ty,
        required,
        description,
        aliases,
    }
}

/// The eleven builtin tools of DESIGN.md, in the order the system prompt teaches them.
pub const BUILTINS: &[ToolSpec] = &[
    ToolSpec {
        name: "read",
        verb: "READ",
        syntax: "READ path[:start-end]",
        hint: "show a file or a line range",
        description: "Show a file, or a range of its lines.",
        args: &[
            arg(
                "path",
                ArgType::String,
                true,
                "file path relative to the repository root",
                PATH_ALIASES,
            ),
            arg(
                "start",
                ArgType::Integer,
                false,
                "first line to show (1-based)",
                &["start_line", "line_start", "from_line"],
            ),
            arg(
                "end",
                ArgType::Integer,
                false,
                "last line to show (inclusive)",
                &["end_line", "line_end", "to_line"],
            ),
        ],
    },
    ToolSpec {
        name: "list",
        verb: "LIST",
        syntax: "LIST [dir]",
        hint: "list a directory",
        description: "List a directory.",
        args: &[arg(
            "path",
            ArgType::String,
            true,
            "directory path; \".\" for the repository root",
            DIR_ALIASES,
        )],
    },
    ToolSpec {
        name: "glob",
        verb: "GLOB",
        syntax: "GLOB pattern",
        hint: "find files by name",
        description: "Find files whose path matches a glob pattern.",
        args: &[arg(
            "pattern",
            ArgType::String,
            true,
            "glob pattern, e.g. \"src/**/*.rs\"",
            &["glob"],
        )],
    },
    ToolSpec {
        name: "grep",
        verb: "GREP",
        syntax: "GREP pattern [-- path]",
        hint: "search file contents",
        description: "Search file contents for a regular expression.",
        args: &[
            arg(
                "pattern",
                ArgType::String,
                true,
                "regular expression",
                &["regex", "query"],
            ),
            arg(
                "path",
                ArgType::String,
                false,
                "file or directory to search; default: the whole repository",
                PATH_ALIASES,
            ),
        ],
    },
    ToolSpec {
        name: "run",
        verb: "RUN",
        syntax: "RUN program args",
        hint: "run a program (no shell)",
        description: "Run a program directly (no shell) and return its output.",
        // `command`/`cmd` as a string are handled in `validate_builtin`: they need splitting.
        args: &[arg(
            "argv",
            ArgType::StringArray,
            true,
            "program and its arguments",
            &["command", "cmd", "args"],
        )],
    },
    ToolSpec {
        name: "delete",
        verb: "DELETE",
        syntax: "DELETE path",
        hint: "delete a file",
        description: "Delete a file.",
        args: &[arg(
            "path",
            ArgType::String,
            true,
            "file to delete",
            PATH_ALIASES,
        )],
    },
    ToolSpec {
        name: "mkdir",
        verb: "MKDIR",
        syntax: "MKDIR path",
        hint: "make a directory",
        description: "Make a directory, with any missing parents.",
        args: &[arg(
            "path",
            ArgType::String,
            true,
            "directory to make",
            DIR_ALIASES,
        )],
    },
    ToolSpec {
        name: "move",
        verb: "MOVE",
        syntax: "MOVE src -> dst",
        hint: "move or rename a file",
        description: "Move or rename a file.",
        args: &[
            arg(
                "from",
                ArgType::String,
                true,
                "current path",
                &["src", "source", "old_path", "from_path"],
            ),
            arg(
                "to",
                ArgType::String,
                true,
                "new path",
                &["dst", "dest", "destination", "new_path", "to_path"],
            ),
        ],
    },
    ToolSpec {
        name: "edit",
        verb: "EDIT",
        syntax: "EDIT path",
        hint: "then one or more blocks of this form:",
        description: "Edit a file by replacing exact text.",
        args: &[
            arg("path", ArgType::String, true, "file to edit", PATH_ALIASES),
            arg(
                "blocks",
                ArgType::Blocks,
                true,
                "replacements, applied in order",
                &["edits", "changes"],
            ),
        ],
    },
    ToolSpec {
        name: "create",
        verb: "CREATE",
        syntax: "CREATE path",
        hint: "then one block whose SEARCH part is empty",
        description: "Create a new file.",
        args: &[
            arg(
                "path",
                ArgType::String,
                true,
                "path of the new file",
                PATH_ALIASES,
            ),
            arg(
                "content",
                ArgType::Lines,
                true,
                "full content of the file",
                &["contents", "file_text", "text"],
            ),
        ],
    },
    ToolSpec {
        name: "done",
        verb: "DONE",
        syntax: "DONE summary",
        hint: "when the task is finished",
        description: "Finish the task.",
        args: &[arg(
            "summary",
            ArgType::String,
            true,
            "what was done",
            &["message", "result"],
        )],
    },
];

/// Block argument names and their aliases (Anthropic- and aider-style spellings).
const SEARCH_ALIASES: &[&str] = &["old_string", "old_str", "old", "original"];
const REPLACE_ALIASES: &[&str] = &["new_string", "new_str", "new", "updated", "replacement"];

/// The placeholder bodies of the SEARCH/REPLACE block the system prompt shows; a block that
/// repeats one is an echo of the help text, not an edit.
pub const EXAMPLE_SEARCH: &str = "exact lines copied from the file\n";
pub const EXAMPLE_REPLACE: &str = "the new lines\n";

/// The file the worked example of [`PromptStyle::Example`] (and the whole protocol's) edits;
/// an edit of it is an echo. A name a task is unlikely to use: the 0.5B, given a task on a
/// `greet.py` while the example was `example/greet.py`, wrote `example/greet.py` three turns
/// running (benches/README.md, session 10).
pub const WORKED_EXAMPLE_PATH: &str = "example/colors.py";

/// The whole-file protocol's example: a file at the repository's root, named by its bare
/// path. With a directory in the example's path (`example/colors.py`), the 0.5B wrote its
/// real files under it (`example/greet.py` for `greet.py`; 30 such blocks over 16 tasks in
/// session 10's bench). A block writing exactly this content to this path is an echo.
pub const WHOLE_EXAMPLE_PATH: &str = "colors.py";
/// The content of [`WHOLE_EXAMPLE_PATH`] in the example.
pub const WHOLE_EXAMPLE_CONTENT: &str =
    "def hex_color(r, g, b):\n    return f\"#{r:02x}{g:02x}{b:02x}\"\n";

/// One worked exchange, for prompts that teach by example.
pub const WORKED_EXAMPLE: &str = "Example. Task: colors.py should print \"teal\" instead of \"blue\".\n\
Reply:\n\
Changing the color.\n\
EDIT example/colors.py\n\
<<<<<<< SEARCH\n\
print(\"blue\")\n\
=======\n\
print(\"teal\")\n\
>>>>>>> REPLACE";

/// How the text protocol is taught in the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PromptStyle {
    /// Each verb's syntax and what it does, quoting rules, one sentence of prose at most.
    #[default]
    Full,
    /// Syntax lines only: the fewest prompt tokens.
    Compact,
    /// [`PromptStyle::Full`] and one worked example.
    Example,
}

impl PromptStyle {
    pub const ALL: [PromptStyle; 3] = [
        PromptStyle::Full,
        PromptStyle::Compact,
        PromptStyle::Example,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            PromptStyle::Full => "full",
            PromptStyle::Compact => "compact",
            PromptStyle::Example => "example",
        }
    }

    pub fn parse(s: &str) -> Option<PromptStyle> {
        PromptStyle::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// The builtin tool called `name` (exact native name).
pub fn builtin(name: &str) -> Option<&'static ToolSpec> {
    BUILTINS.iter().find(|t| t.name == name)
}

/// The builtin tool whose text-protocol verb is `verb` (exact, uppercase).
pub fn builtin_by_verb(verb: &str) -> Option<&'static ToolSpec> {
    BUILTINS.iter().find(|t| t.verb == verb)
}

/// Why a client tool was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Tool names are 1–64 characters of `[A-Za-z0-9_.-]`, as OpenAI requires.
    #[error("invalid tool name {0:?}: use 1-64 characters of A-Z a-z 0-9 _ . -")]
    InvalidName(String),
    /// The name is a builtin's (in any letter case) or another client tool's.
    #[error("tool name {0:?} is already taken")]
    NameClash(String),
    /// The parameters schema is not a JSON object, does not describe an object, or is not a
    /// valid JSON Schema.
    #[error("invalid parameters schema for tool {name:?}: {reason}")]
    InvalidSchema { name: String, reason: String },
}

/// A client-declared tool.
#[derive(Clone)]
pub struct ClientTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for ClientTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

/// One entry of [`Registry::tool_schemas`]: what native mode offers a model for one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Builtin tools plus client-declared ones. `Default` is the builtin registry.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    client: Vec<ClientTool>,
    /// Only client tools exist: an OpenAI client that declares `read` or `edit` means its own
    /// tool, with its own schema, not bellows' builtin of that name.
    client_only: bool,
}

/// Which tool a name resolved to.
enum Resolved<'r> {
    Builtin(&'static ToolSpec),
    Client(&'r ClientTool),
}

impl Registry {
    /// The eleven builtin tools of DESIGN.md.
    pub fn builtin() -> Registry {
        Registry::default()
    }

    /// A registry of client-declared tools only (none yet): the builtin names are free, and
    /// nothing decodes to a builtin action.
    pub fn client_only() -> Registry {
        Registry {
            client: Vec::new(),
            client_only: true,
        }
    }

    /// True when the builtin tools exist in this registry (false for
    /// [`Registry::client_only`]). Without them nothing decodes to a builtin action: the text
    /// protocol (verb lines, edit blocks) is not even looked for, and a builtin name in a
    /// native call is an unknown tool unless the client declared it.
    pub fn has_builtins(&self) -> bool {
        !self.client_only
    }

    /// The builtin spec for `name` (exact), if this registry has builtins.
    fn builtin_spec(&self, name: &str) -> Option<&'static ToolSpec> {
        if self.client_only {
            None
        } else {
            builtin(name)
        }
    }

    /// The builtins this registry offers: all of them, or none for [`Registry::client_only`].
    fn builtins(&self) -> &'static [ToolSpec] {
        if self.client_only { &[] } else { BUILTINS }
    }

    /// The canonical name a written tool name resolves to (exactly, or case-insensitively as
    /// [`Registry::validate`] matches), and whether it is a builtin.
    pub fn resolve_name(&self, name: &str) -> Option<(String, bool)> {
        self.resolve(name).map(|(tool, _)| match tool {
            Resolved::Builtin(t) => (t.name.to_owned(), true),
            Resolved::Client(c) => (c.name.clone(), false),
        })
    }

    /// The names of a tool's parameters in the order its declaration gives them: a
    /// builtin's spec order, or a client schema's `properties` as written (the order a
    /// function's signature is rendered in). Calls that pass arguments by position are mapped
    /// onto it. `None` for an unknown tool, or a schema without a `properties` object.
    pub fn parameter_order(&self, name: &str) -> Option<Vec<String>> {
        match self.resolve(name)?.0 {
            Resolved::Builtin(spec) => Some(spec.args.iter().map(|a| a.name.to_owned()).collect()),
            Resolved::Client(c) => match c.parameters.get("properties") {
                Some(Value::Object(props)) => Some(props.keys().cloned().collect()),
                _ => None,
            },
        }
    }

    /// The names of every tool in this registry: the builtins (if any), then the client tools.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.builtins()
            .iter()
            .map(|t| t.name)
            .chain(self.client.iter().map(|c| c.name.as_str()))
    }

    /// The client-declared tools, in the order they were added.
    pub fn client_tools(&self) -> &[ClientTool] {
        &self.client
    }

    /// True when `name` is a builtin or client tool (exact name).
    pub fn is_known(&self, name: &str) -> bool {
        self.builtin_spec(name).is_some() || self.client.iter().any(|c| c.name == name)
    }

    /// Declares a client tool. Its name must be valid and free (builtin names are reserved in
    /// any letter case, because tool names are matched case-insensitively as a repair), and
    /// `parameters` must be a valid JSON Schema describing an object.
    pub fn add_client_tool(
        &mut self,
        name: &str,
        description: &str,
        parameters: Value,
    ) -> Result<(), RegistryError> {
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !name_ok {
            return Err(RegistryError::InvalidName(name.to_owned()));
        }
        let clash = self
            .builtins()
            .iter()
            .any(|t| t.name.eq_ignore_ascii_case(name))
            || self
                .client
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(name));
        if clash {
            return Err(RegistryError::NameClash(name.to_owned()));
        }
        let invalid = |reason: String| RegistryError::InvalidSchema {
            name: name.to_owned(),
            reason,
        };
        let Value::Object(obj) = &parameters else {
            return Err(invalid("the schema must be a JSON object".to_owned()));
        };
        match obj.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(_) => {
                return Err(invalid(
                    "the arguments must be an object (\"type\": \"object\")".to_owned(),
                ));
            }
        }
        jsonschema::meta::validate(&parameters).map_err(|e| invalid(e.to_string()))?;
        let validator =
            jsonschema::validator_for(&parameters).map_err(|e| invalid(e.to_string()))?;
        self.client.push(ClientTool {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
            validator: Arc::new(validator),
        });
        Ok(())
    }

    /// Resolves a tool name: exactly, or else case-insensitively when that is unique (which
    /// `add_client_tool` guarantees), reporting the latter as an `argument_alias` repair.
    fn resolve(&self, name: &str) -> Option<(Resolved<'_>, bool)> {
        if let Some(t) = self.builtin_spec(name) {
            return Some((Resolved::Builtin(t), false));
        }
        if let Some(c) = self.client.iter().find(|c| c.name == name) {
            return Some((Resolved::Client(c), false));
        }
        if let Some(t) = self
            .builtins()
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
        {
            return Some((Resolved::Builtin(t), true));
        }
        self.client
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
            .map(|c| (Resolved::Client(c), true))
    }

    /// Turns a tool name and its JSON arguments into a validated [`Action`], with the repairs
    /// it took. Unknown tool and schema violations are failures, never guesses.
    ///
    /// Builtins are checked against their argument table: wrong types, missing required
    /// arguments and unknown keys are `bad_arguments`; the aliases in the table are accepted
    /// as `argument_alias` repairs. Block bodies and file content are normalised to whole
    /// LF-terminated lines (`crlf`, `missing_final_newline`). Client tools are checked
    /// against their JSON schema and give [`Action::Client`].
    pub fn validate(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<(Action, Vec<RepairKind>), FailureKind> {
        let Some((tool, case_repair)) = self.resolve(name) else {
            return Err(FailureKind::UnknownTool);
        };
        let mut repairs = Vec::new();
        if case_repair {
            repairs.push(RepairKind::ArgumentAlias);
        }
        match tool {
            Resolved::Builtin(spec) => {
                let action = validate_builtin(spec, arguments, &mut repairs)?;
                Ok((action, repairs))
            }
            Resolved::Client(c) => {
                if !c.validator.is_valid(arguments) {
                    return Err(FailureKind::BadArguments);
                }
                Ok((
                    Action::Client {
                        name: c.name.clone(),
                        arguments: arguments.clone(),
                    },
                    repairs,
                ))
            }
        }
    }

    /// The JSON schemas native mode offers: the builtins, then the client tools.
    pub fn tool_schemas(&self) -> Vec<ToolSchema> {
        let mut out: Vec<ToolSchema> = self
            .builtins()
            .iter()
            .map(|t| ToolSchema {
                name: t.name.to_owned(),
                description: t.description.to_owned(),
                parameters: builtin_schema(t),
            })
            .collect();
        out.extend(self.client.iter().map(|c| ToolSchema {
            name: c.name.clone(),
            description: c.description.clone(),
            parameters: c.parameters.clone(),
        }));
        out
    }

    /// The system-prompt text that teaches the text protocol ([`PromptStyle::Full`]).
    pub fn system_prompt(&self) -> String {
        self.system_prompt_styled(PromptStyle::Full)
    }

    /// The system-prompt text that teaches the text protocol in `style`. Client tools, which
    /// have no verb, are taught as `<tool_call>` JSON lines after the verbs.
    pub fn system_prompt_styled(&self, style: PromptStyle) -> String {
        let mut s = String::from(match style {
            PromptStyle::Compact => {
                "You are a coding agent in a repository. Reply with commands, one per line:\n"
            }
            _ => {
                "You are a coding agent working inside a repository. Act by writing commands, \
                 one per line, each starting at the beginning of a line:\n"
            }
        });
        for t in BUILTINS {
            if style == PromptStyle::Compact {
                let _ = writeln!(s, "{}", t.syntax);
            } else {
                let _ = writeln!(s, "{}  {}", t.syntax, t.hint);
            }
            if t.name == "edit" {
                let _ = writeln!(
                    s,
                    "<<<<<<< SEARCH\n{EXAMPLE_SEARCH}=======\n{EXAMPLE_REPLACE}>>>>>>> REPLACE"
                );
            }
        }
        if !self.client.is_empty() {
            s.push_str(
                "Other tools: call one on its own line as <tool_call>{\"name\": NAME, \
                 \"arguments\": {...}}</tool_call>\n",
            );
            for c in &self.client {
                let _ = writeln!(
                    s,
                    "{}  {}  arguments: {}",
                    c.name, c.description, c.parameters
                );
            }
        }
        match style {
            PromptStyle::Compact => s.push_str("Write DONE summary when the task is finished."),
            PromptStyle::Full | PromptStyle::Example => s.push_str(
                "Quote a path with spaces in single quotes. RUN takes shell quoting, but no shell \
                 runs it.\nWrite at most one short sentence before your commands.",
            ),
        }
        if style == PromptStyle::Example {
            s.push_str("\n\n");
            s.push_str(WORKED_EXAMPLE);
        }
        s
    }

    /// The GBNF grammar (llama.cpp syntax, root rule `root`) of a reply in the text protocol:
    /// any number of prose lines and actions. It is what `grammars/text-protocol.gbnf` holds.
    pub fn text_protocol_gbnf(&self) -> String {
        text_protocol_gbnf()
    }
}

/// The JSON Schema of a builtin's arguments, generated from its table row.
fn builtin_schema(t: &ToolSpec) -> Value {
    let mut props = Map::new();
    for a in t.args {
        let mut p = match a.ty {
            ArgType::String | ArgType::Lines => json!({"type": "string"}),
            ArgType::Integer => json!({"type": "integer", "minimum": 0}),
            ArgType::StringArray => {
                json!({"type": "array", "items": {"type": "string"}, "minItems": 1})
            }
            ArgType::Blocks => json!({
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "search": {"type": "string", "description": "exact lines copied from the file"},
                        "replace": {"type": "string", "description": "the new lines"}
                    },
                    "required": ["search", "replace"],
                    "additionalProperties": false
                }
            }),
        };
        if let Value::Object(m) = &mut p {
            m.insert(
                "description".to_owned(),
                Value::String(a.description.to_owned()),
            );
        }
        props.insert(a.name.to_owned(), p);
    }
    let required: Vec<Value> = t
        .args
        .iter()
        .filter(|a| a.required)
        .map(|a| Value::String(a.name.to_owned()))
        .collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    })
}

/// Picks each argument of `spec` out of `obj` by its name or one of its aliases. Any key that
/// is neither, or an argument given twice under two spellings, is `bad_arguments`.
fn pick_args<'v>(
    spec: &ToolSpec,
    obj: &'v Map<String, Value>,
    repairs: &mut Vec<RepairKind>,
) -> Result<Vec<Option<&'v Value>>, FailureKind> {
    let mut found: Vec<Option<&Value>> = vec![None; spec.args.len()];
    for (key, value) in obj {
        let slot = spec
            .args
            .iter()
            .position(|a| a.name == key)
            .map(|i| (i, false))
            .or_else(|| {
                spec.args
                    .iter()
                    .position(|a| a.aliases.contains(&key.as_str()))
                    .map(|i| (i, true))
            });
        let Some((i, alias)) = slot else {
            return Err(FailureKind::BadArguments);
        };
        if found[i].is_some() {
            return Err(FailureKind::BadArguments);
        }
        // An optional argument given as `null` means "absent", as JSON APIs usually take it.
        if value.is_null() && !spec.args[i].required {
            continue;
        }
        if alias {
            repairs.push(RepairKind::ArgumentAlias);
        }
        found[i] = Some(value);
    }
    Ok(found)
}

fn req(v: Option<&Value>) -> Result<&Value, FailureKind> {
    v.ok_or(FailureKind::BadArguments)
}

fn string(v: &Value) -> Result<String, FailureKind> {
    v.as_str()
        .map(str::to_owned)
        .ok_or(FailureKind::BadArguments)
}

fn opt_string(v: Option<&Value>) -> Result<Option<String>, FailureKind> {
    v.map(string).transpose()
}

fn opt_integer(v: Option<&Value>) -> Result<Option<u64>, FailureKind> {
    v.map(|v| v.as_u64().ok_or(FailureKind::BadArguments))
        .transpose()
}

/// Normalises a body of whole lines: CRLF to LF, and a final newline on a non-empty body.
/// Each normalisation is one repair for this body.
pub fn normalise_lines(s: &str, repairs: &mut Vec<RepairKind>) -> String {
    let mut out = if s.contains("\r\n") {
        repairs.push(RepairKind::Crlf);
        s.replace("\r\n", "\n")
    } else {
        s.to_owned()
    };
    if !out.is_empty() && !out.ends_with('\n') {
        repairs.push(RepairKind::MissingFinalNewline);
        out.push('\n');
    }
    out
}

fn blocks(v: &Value, repairs: &mut Vec<RepairKind>) -> Result<Vec<Block>, FailureKind> {
    let Value::Array(items) = v else {
        return Err(FailureKind::BadArguments);
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(obj) = item else {
            return Err(FailureKind::BadArguments);
        };
        let (search, replace) = block_parts(obj, repairs)?;
        let (Some(search), Some(replace)) = (search, replace) else {
            return Err(FailureKind::BadArguments);
        };
        out.push(block_from(search, replace, repairs)?);
    }
    Ok(out)
}

/// Finds the `search` and `replace` parts of a block object, by name or alias. Unknown keys
/// and a part given twice are `bad_arguments`.
fn block_parts<'v>(
    obj: &'v Map<String, Value>,
    repairs: &mut Vec<RepairKind>,
) -> Result<(Option<&'v Value>, Option<&'v Value>), FailureKind> {
    let (mut search, mut replace) = (None, None);
    for (key, value) in obj {
        let (slot, alias) = match key.as_str() {
            "search" => (&mut search, false),
            "replace" => (&mut replace, false),
            k if SEARCH_ALIASES.contains(&k) => (&mut search, true),
            k if REPLACE_ALIASES.contains(&k) => (&mut replace, true),
            _ => return Err(FailureKind::BadArguments),
        };
        if slot.is_some() {
            return Err(FailureKind::BadArguments);
        }
        if alias {
            repairs.push(RepairKind::ArgumentAlias);
        }
        *slot = Some(value);
    }
    Ok((search, replace))
}

fn block_from(
    search: &Value,
    replace: &Value,
    repairs: &mut Vec<RepairKind>,
) -> Result<Block, FailureKind> {
    let (Some(search), Some(replace)) = (search.as_str(), replace.as_str()) else {
        return Err(FailureKind::BadArguments);
    };
    Ok(Block {
        search: normalise_lines(search, repairs),
        replace: normalise_lines(replace, repairs),
    })
}

fn validate_builtin(
    spec: &'static ToolSpec,
    arguments: &Value,
    repairs: &mut Vec<RepairKind>,
) -> Result<Action, FailureKind> {
    let Value::Object(obj) = arguments else {
        return Err(FailureKind::BadArguments);
    };
    match spec.name {
        "run" => return validate_run(obj, repairs),
        "edit" => return validate_edit(spec, obj, repairs),
        _ => {}
    }
    let a = pick_args(spec, obj, repairs)?;
    let action = match spec.name {
        "read" => Action::Read {
            path: string(req(a[0])?)?,
            start: opt_integer(a[1])?,
            end: opt_integer(a[2])?,
        },
        "list" => Action::List {
            path: string(req(a[0])?)?,
        },
        "glob" => Action::Glob {
            pattern: string(req(a[0])?)?,
        },
        "grep" => Action::Grep {
            pattern: string(req(a[0])?)?,
            path: opt_string(a[1])?,
        },
        "delete" => Action::Delete {
            path: string(req(a[0])?)?,
        },
        "mkdir" => Action::Mkdir {
            path: string(req(a[0])?)?,
        },
        "move" => Action::Move {
            from: string(req(a[0])?)?,
            to: string(req(a[1])?)?,
        },
        "create" => {
            let path = string(req(a[0])?)?;
            let content = req(a[1])?.as_str().ok_or(FailureKind::BadArguments)?;
            Action::Create {
                path,
                content: normalise_lines(content, repairs),
            }
        }
        "done" => Action::Done {
            summary: string(req(a[0])?)?,
        },
        // Every row of BUILTINS is matched above; a new row without a case fails loudly in
        // the registry tests rather than decoding anything.
        _ => return Err(FailureKind::UnknownTool),
    };
    Ok(action)
}

/// `run`: `argv` as an array of strings; or, as an `argument_alias` repair, `command`/`cmd`
/// as an array, or as a string split with POSIX quoting when it uses no shell syntax (a
/// pipeline or redirection written for a shell cannot mean the same without one).
fn validate_run(
    obj: &Map<String, Value>,
    repairs: &mut Vec<RepairKind>,
) -> Result<Action, FailureKind> {
    if obj.len() != 1 {
        return Err(FailureKind::BadArguments);
    }
    let Some((key, value)) = obj.iter().next() else {
        return Err(FailureKind::BadArguments);
    };
    let alias = match key.as_str() {
        "argv" => false,
        "command" | "cmd" | "args" => true,
        _ => return Err(FailureKind::BadArguments),
    };
    let argv = match value {
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or(FailureKind::BadArguments)
            })
            .collect::<Result<Vec<_>, _>>()?,
        Value::String(s) if alias => split_argv(s).map_err(|_| FailureKind::BadArguments)?,
        _ => return Err(FailureKind::BadArguments),
    };
    if argv.is_empty() {
        return Err(FailureKind::BadArguments);
    }
    if alias {
        repairs.push(RepairKind::ArgumentAlias);
    }
    Ok(Action::Run { argv })
}

/// `edit`: `{path, blocks}`; or, as an `argument_alias` repair, a single block given at the
/// top level (`{path, old_string, new_string}`, Anthropic's spelling). A block with an empty
/// SEARCH part stays in the edit (append, or create the file when missing) with an
/// `empty_search_edit` repair per such block; it never becomes a whole-file `create`.
fn validate_edit(
    spec: &'static ToolSpec,
    obj: &Map<String, Value>,
    repairs: &mut Vec<RepairKind>,
) -> Result<Action, FailureKind> {
    let is_block_key = |k: &str| {
        k == "search"
            || k == "replace"
            || SEARCH_ALIASES.contains(&k)
            || REPLACE_ALIASES.contains(&k)
    };
    let (path_obj, block_obj): (Map<String, Value>, Map<String, Value>) = obj
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| !is_block_key(k));
    let blocks = if block_obj.is_empty() {
        let a = pick_args(spec, &path_obj, repairs)?;
        let path = string(req(a[0])?)?;
        (path, blocks(req(a[1])?, repairs)?)
    } else {
        let (search, replace) = block_parts(&block_obj, repairs)?;
        let (Some(search), Some(replace)) = (search, replace) else {
            return Err(FailureKind::BadArguments);
        };
        let a = pick_args(spec, &path_obj, repairs)?;
        if a[1].is_some() {
            return Err(FailureKind::BadArguments);
        }
        repairs.push(RepairKind::ArgumentAlias);
        let path = string(req(a[0])?)?;
        (path, vec![block_from(search, replace, repairs)?])
    };
    let (path, blocks) = blocks;
    if blocks.is_empty() {
        return Err(FailureKind::BadBlockCount);
    }
    let empty = blocks.iter().filter(|b| b.search.is_empty());
    repairs.extend(empty.map(|_| RepairKind::EmptySearchEdit));
    Ok(Action::Edit { path, blocks })
}

/// Why a RUN line's words did not split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitError {
    /// A quote was opened and never closed (or a trailing lone backslash).
    Unclosed,
    /// Unquoted shell syntax (`|`, `&`, `;`, `<`, `>`, `` ` ``, `$(`, `(`, `)`): the command was
    /// written for a shell, and without one it would mean something else.
    ShellSyntax,
    /// A newline inside the words.
    Newline,
}

/// Splits a RUN line's arguments into argv with POSIX shell quoting: `'…'` is literal, `"…"`
/// allows `\"`, `\\`, `` \` `` and `\$`, and an unquoted backslash escapes the next
/// character. Nothing is expanded: `$HOME` stays `$HOME`, `*` stays `*`.
pub fn split_argv(s: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\r' => return Err(SplitError::Newline),
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some('\n' | '\r') => return Err(SplitError::Newline),
                        Some(c) => cur.push(c),
                        None => return Err(SplitError::Unclosed),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '`' | '$')) => cur.push(c),
                            Some('\n' | '\r') => return Err(SplitError::Newline),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(SplitError::Unclosed),
                        },
                        Some('\n' | '\r') => return Err(SplitError::Newline),
                        Some(c) => cur.push(c),
                        None => return Err(SplitError::Unclosed),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n' | '\r') => return Err(SplitError::Newline),
                Some(c) => {
                    in_word = true;
                    cur.push(c);
                }
                None => return Err(SplitError::Unclosed),
            },
            '|' | '&' | ';' | '<' | '>' | '`' | '(' | ')' => return Err(SplitError::ShellSyntax),
            '$' if chars.peek() == Some(&'(') => return Err(SplitError::ShellSyntax),
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// The GBNF grammar of the text protocol, generated from [`BUILTINS`].
fn text_protocol_gbnf() -> String {
    let mut g = String::new();
    g.push_str("# The bellows text protocol: prose lines and actions, one per line.\n");
    g.push_str("# Generated by codec::Registry::text_protocol_gbnf(); do not edit by hand.\n");
    g.push_str("# Rewrite with: UPDATE_EXPECT=1 cargo test -p codec --test registry\n\n");
    g.push_str("root ::= (prose | action)*\n\n");
    // Prose may not open with two capitals or a marker character, so an action line is only
    // ever an action and the grammar stays unambiguous for llama.cpp's stack machine.
    g.push_str(
        "prose ::= \"\\n\" | [^A-Z<=>\\n] [^\\n]* \"\\n\" | [A-Z] ([^A-Z\\n] [^\\n]*)? \"\\n\"\n\n",
    );
    let names: Vec<String> = BUILTINS
        .iter()
        .map(|t| format!("{}-action", t.name))
        .collect();
    let _ = writeln!(g, "action ::= {}\n", names.join(" | "));
    for t in BUILTINS {
        let verb = t.verb;
        let body = match t.name {
            "read" => format!("\"{verb} \" path range? \"\\n\""),
            "list" => format!("\"{verb}\" (\" \" path)? \"\\n\""),
            "glob" => format!("\"{verb} \" word \"\\n\""),
            "grep" => format!("\"{verb} \" word (\" -- \" path)? \"\\n\""),
            "run" => format!("\"{verb} \" word (\" \" word)* \"\\n\""),
            "move" => format!("\"{verb} \" path \" -> \" path \"\\n\""),
            "done" => format!("\"{verb}\" (\" \" [^\\n]*)? \"\\n\""),
            "edit" => format!("\"{verb} \" path \"\\n\" block+"),
            "create" => format!("\"{verb} \" path \"\\n\" create-block"),
            _ => format!("\"{verb} \" path \"\\n\""),
        };
        let _ = writeln!(g, "{}-action ::= {}", t.name, body);
    }
    g.push_str(concat!(
        "\n# Arguments are words with POSIX quoting (no shell). A path is bare path characters\n",
        "# or single-quoted; a READ range is start-end, both 1-based.\n",
        "path ::= ([A-Za-z0-9._/~+@\\u0080-\\U0010FFFF] | \"'\" [^'\\n]* \"'\" | \"\\\\'\")+\n",
        "range ::= \":\" [1-9] [0-9]* \"-\" [1-9] [0-9]*\n",
        "word ::= ([^ \\t\\n'\"\\\\] | \"\\\\\" [^\\n] | \"'\" [^'\\n]* \"'\" | \"\\\"\" ([^\"\\\\\\n] | \"\\\\\" [^\\n])* \"\\\"\")+\n",
        "\n# SEARCH/REPLACE blocks: bodies are whole lines.\n",
        "block ::= \"<<<<<<< SEARCH\\n\" line* \"=======\\n\" line* \">>>>>>> REPLACE\\n\"\n",
        "create-block ::= \"<<<<<<< SEARCH\\n=======\\n\" line* \">>>>>>> REPLACE\\n\"\n",
        "line ::= [^\\n]* \"\\n\"\n",
    ));
    let tools: Vec<&str> = BUILTINS.iter().map(|t| t.name).collect();
    g.push_str(&crate::strict_gbnf::strict_rules(&tools));
    g
}

// `Action::from_gold` lives here, beside the validation it runs, so the action types at the
// bottom of the crate do not depend on the registry.
impl Action {
    /// Parses a `{"name", "arguments"}` object (a corpus `gold` entry) against the builtin
    /// registry: see [`Registry::gold_action`].
    pub fn from_gold(value: &serde_json::Value) -> Result<Action, GoldError> {
        Registry::builtin().gold_action(value)
    }
}

impl Registry {
    /// Parses a `{"name", "arguments"}` object (a corpus `gold` entry) as the action this
    /// registry would decode it to. A tool the registry knows is validated as decoding
    /// validates it (builtin bodies normalised to whole lines, client arguments checked
    /// against their schema). A name it does not know is taken as a client tool with its
    /// arguments as given when the registry has builtins (a corpus line without `tools`
    /// declares no schema to check it against); a client-only registry holds every tool the
    /// reply could call, so there an unknown name is an error.
    pub fn gold_action(&self, value: &serde_json::Value) -> Result<Action, GoldError> {
        let (Some(name), Some(arguments)) = (
            value.get("name").and_then(|n| n.as_str()),
            value.get("arguments"),
        ) else {
            return Err(GoldError::Shape);
        };
        if self.has_builtins() && !self.is_known(name) {
            return Ok(Action::Client {
                name: name.to_owned(),
                arguments: arguments.clone(),
            });
        }
        self.validate(name, arguments)
            .map(|(action, _repairs)| action)
            .map_err(|kind| GoldError::Invalid {
                name: name.to_owned(),
                kind,
            })
    }
}
