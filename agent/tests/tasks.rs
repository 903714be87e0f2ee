//! The task suite's own honesty: for the tasks of `benches/agent-tasks`, a plausible wrong fix
//! (fitted to the visible test, one of two call sites, a caller working around the bug, a
//! helper deleted with the dead code...) played as a scripted session must end as a false
//! success, never solved: `verify.sh` must see through it. The visible checks are left out, so
//! that the DONE is judged by `verify.sh` alone.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

use std::path::PathBuf;

use agent::bench::{self, BenchConfig, Task};
use agent::{ApprovalMode, Config, Policy, StopReason};

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/agent-tasks")
}

/// Without the tasks' visible checks: the DONE is accepted as it comes.
fn unchecked() -> BenchConfig {
    let mut session = Config::new("", Policy::new(ApprovalMode::Ask));
    session.max_turns = 12;
    session.reply_reserve = 512;
    let mut cfg = BenchConfig::new(session, Default::default());
    cfg.no_check = true;
    cfg
}

fn run_with(task: &Task, cfg: &BenchConfig) -> bench::TaskResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = bench::oracle_engine(task).unwrap();
    rt.block_on(bench::run_task(&engine, task, cfg)).unwrap()
}

/// One EDIT reply with a single SEARCH/REPLACE block.
fn edit(path: &str, search: &str, replace: &str) -> String {
    format!("EDIT {path}\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n")
}

/// One CREATE reply.
fn create(path: &str, content: &str) -> String {
    format!("CREATE {path}\n<<<<<<< SEARCH\n=======\n{content}\n>>>>>>> REPLACE\n")
}

/// Per task, the replies of a plausible wrong fix (DONE is appended).
fn wrong_fixes() -> Vec<(&'static str, &'static str, Vec<String>)> {
    vec![
        (
            "fix-discount-bug",
            "the caller works around the bug (the visible test passes)",
            vec![edit(
                "inventory.py",
                "    return sum(discounted(qty * price, percent) for qty, price in items)",
                "    return sum(discounted(qty * price, -percent) for qty, price in items)",
            )],
        ),
        (
            "fix-count-flag",
            "one line too many",
            vec![edit(
                "cli.py",
                "    for i in range(1, args.count):",
                "    for i in range(args.count + 1):",
            )],
        ),
        (
            "add-param-callers",
            "only one of the two callers updated",
            vec![
                edit(
                    "money.py",
                    "def format_price(amount):\n    \"\"\"An amount with two decimals and its currency, e.g. 3.50 USD.\"\"\"\n    return f\"{amount:.2f} USD\"",
                    "def format_price(amount, currency=\"USD\"):\n    return f\"{amount:.2f} {currency}\"",
                ),
                edit(
                    "invoice.py",
                    "    return f\"{item}: {format_price(amount)}\"",
                    "    return f\"{item}: {format_price(amount, 'EUR')}\"",
                ),
            ],
        ),
        (
            "rename-module",
            "moved, but report.py still imports the old name",
            vec![
                "MOVE strutil.py -> text_utils.py\n".to_owned(),
                edit(
                    "app.py",
                    "from strutil import slugify",
                    "from text_utils import slugify",
                ),
            ],
        ),
        (
            "extract-constant",
            "the constant added, one literal 30 left",
            vec![edit(
                "client.py",
                "def fetch(session, url):\n    return session.get(url, timeout=30)",
                "TIMEOUT = 30\n\n\ndef fetch(session, url):\n    return session.get(url, timeout=TIMEOUT)",
            )],
        ),
        (
            "add-config-file",
            "the port as a string",
            vec![create(
                "config.json",
                "{\"name\": \"demo\", \"port\": \"8080\", \"workers\": 4}",
            )],
        ),
        (
            "empty-list-average",
            "the empty list special-cased in summary only",
            vec![edit(
                "scores.py",
                "def summary(scores):",
                "def summary(scores):\n    if not scores:\n        return \"0 scores, average 0.0\"",
            )],
        ),
        (
            "write-unit-test",
            "a test of its own copy of slugify",
            vec![create(
                "test_slug.py",
                "import re\n\n\ndef slugify(title):\n    return \"-\".join(re.findall(r\"[a-z0-9]+\", title.lower()))\n\n\nassert slugify(\"Hello, World!\") == \"hello-world\"\nprint(\"ok\")",
            )],
        ),
        (
            "add-flag-sh",
            "the count written into the script",
            vec![edit(
                "todo.sh",
                "file=$1",
                "if [ \"$1\" = -c ]; then echo 2; exit 0; fi\nfile=$1",
            )],
        ),
        (
            "fix-price-format",
            "the line items fixed, the total not",
            vec![edit(
                "cart.py",
                "    return f\"{name} x{qty}: ${qty * price}\"",
                "    return f\"{name} x{qty}: ${qty * price:.2f}\"",
            )],
        ),
        (
            "main-guard",
            "the demo deleted instead of guarded",
            vec![edit(
                "textstats.py",
                "text = \" \".join(sys.argv[1:]) or \"the quick brown fox\"\nprint(\"words:\", word_count(text))\nprint(\"longest:\", longest_word(text))",
                "",
            )],
        ),
        (
            "update-readme-usage",
            "the code changed to match the README",
            vec![edit(
                "resize.py",
                "parser.add_argument(\"--width\", type=int, required=True, help=\"new width in pixels\")",
                "parser.add_argument(\"--scale\", type=int)\nparser.add_argument(\"-w\", \"--width\", type=int, required=True, help=\"new width in pixels\")",
            )],
        ),
        (
            "delete-dead-code",
            "the helper parse still uses deleted along with it",
            vec![edit(
                "confparse.py",
                "def _strip_comment(line):\n    return line.split(\"#\", 1)[0].strip()\n",
                "",
            )],
        ),
        (
            "quote-filenames-sh",
            "only the loop quoted",
            vec![edit(
                "linecount.sh",
                "for f in $@; do",
                "for f in \"$@\"; do",
            )],
        ),
        (
            "fix-bump-sh",
            "bump.sh works around the broken helper",
            vec![edit(
                "bump.sh",
                "pa=$(patch \"$v\")",
                "pa=$(echo \"$v\" | cut -d. -f3)",
            )],
        ),
        (
            "fix-off-by-one-py",
            "fitted to the visible test's two lists",
            vec![edit(
                "stats.py",
                "    return total / len(xs)",
                "    if xs in ([2], [1, 2, 3]):\n        return 2\n    return total / len(xs)",
            )],
        ),
        (
            "change-constant",
            "a second assignment below the old one",
            vec![edit(
                "config.py",
                "TIMEOUT = 10",
                "TIMEOUT = 10\nMAX_RETRIES = 5",
            )],
        ),
        (
            "two-blocks-one-file",
            "new lines added next to the old ones",
            vec![
                edit("settings.ini", "port = 8000", "port = 8000\nport = 8080"),
                edit(
                    "settings.ini",
                    "debug = true",
                    "debug = true\ndebug = false",
                ),
            ],
        ),
    ]
}

#[test]
fn a_plausible_wrong_fix_is_a_false_success() {
    let dir = suite_dir();
    for (name, what, replies) in wrong_fixes() {
        let mut task = Task::load(&dir.join(name)).unwrap();
        let mut replies = replies;
        replies.push(format!("DONE {what}\n"));
        let n = replies.len();
        task.oracle = Some(replies);
        // verify.sh is what is tested here: the session's own refusals (a broken import, a
        // task's command printing what it did) would stop some wrong fixes before it runs.
        let mut cfg = unchecked();
        cfg.session.lint = false;
        cfg.session.probes = false;
        let r = run_with(&task, &cfg);
        assert_eq!(r.reason, Some(StopReason::Done), "{name}: {what}");
        assert_eq!(
            r.acted as usize, n,
            "{name}: every reply of the wrong fix acts ({what})"
        );
        assert!(
            r.false_success() && !r.verified,
            "{name}: verify.sh accepts a wrong fix: {what}"
        );
    }
}
