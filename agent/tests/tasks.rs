//! The task suites' own honesty: for the tasks of `benches/agent-tasks` and of
//! `benches/agent-tasks-hard`, a plausible wrong fix (fitted to the visible test or the shipped
//! example, one of two call sites or of several files, a caller working around the bug, a
//! special case instead of a general fix, a helper deleted with the dead code...) played as a
//! scripted session must end as a false success, never solved: `verify.sh` must see through
//! it. The visible checks are left out, so that the DONE is judged by `verify.sh` alone.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

use std::path::PathBuf;

use agent::bench::{self, BenchConfig, Task};
use agent::{ApprovalMode, Config, Policy, StopReason};

/// A suite of `benches/` by its directory name.
fn suite_dir(suite: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../benches")
        .join(suite)
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
    edits(path, &[(search, replace)])
}

/// One EDIT reply with several SEARCH/REPLACE blocks, in file order: the hard tasks' wrong
/// fixes change three places of one file, and one reply each would be three turns.
fn edits(path: &str, blocks: &[(&str, &str)]) -> String {
    let mut reply = format!("EDIT {path}\n");
    for (search, replace) in blocks {
        reply.push_str(&format!(
            "<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
        ));
    }
    reply
}

/// One CREATE reply.
fn create(path: &str, content: &str) -> String {
    format!("CREATE {path}\n<<<<<<< SEARCH\n=======\n{content}\n>>>>>>> REPLACE\n")
}

/// A task's name, what the wrong fix does (the DONE's words), and its replies.
type WrongFix = (&'static str, &'static str, Vec<String>);

/// Per task of `benches/agent-tasks`, the replies of a plausible wrong fix (DONE is appended).
fn wrong_fixes() -> Vec<WrongFix> {
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

/// Per task of `benches/agent-tasks-hard`, the replies of a plausible wrong fix (DONE is
/// appended): the ones its README says its `verify.sh` rejects, each of which passes the
/// shipped example or test, so only the hidden cases and the other files can tell.
fn hard_wrong_fixes() -> Vec<WrongFix> {
    vec![
        (
            "orders-newest-first",
            "the report lists the orders backwards, since orders.csv is oldest first",
            vec![edit(
                "report.py",
                "    for o in newest_first(orders):",
                "    for o in reversed(orders):",
            )],
        ),
        (
            "notice-wrap",
            "the last line appended even when there is none",
            vec![edit(
                "textfmt.py",
                "            line = f\"{line} {word}\" if line else word\n    return lines",
                "            line = f\"{line} {word}\" if line else word\n    lines.append(line)\n    return lines",
            )],
        ),
        (
            "backoff-cap",
            "the cap written as the shipped test's 5",
            vec![edit(
                "retry.py",
                "        out.append(delay)",
                "        out.append(min(delay, 5))",
            )],
        ),
        (
            "latest-release-sh",
            "only the minor part sorted as a number, where the shipped tags differ",
            vec![edit(
                "versions.sh",
                "    sort -t. -k1,1 -k2,2 -k3,3",
                "    sort -t. -k1,1 -k2,2n -k3,3",
            )],
        ),
        (
            "archive-dir-sh",
            "one trailing slash stripped, not all of them",
            vec![edit(
                "paths.sh",
                r#"    printf '%s\n' "${1##*/}""#,
                r#"    p=${1%/}
    printf '%s\n' "${p##*/}""#,
            )],
        ),
        (
            "rename-config-key",
            "renamed everywhere but health.py, whose .get default hides the old key",
            vec![
                edit(
                    "config.json",
                    "  \"timeout\": 5,",
                    "  \"timeout_seconds\": 5,",
                ),
                edit(
                    "config.py",
                    "    \"timeout\": 10,",
                    "    \"timeout_seconds\": 10,",
                ),
                edit(
                    "client.py",
                    "    return f\"GET {url} (timeout {cfg['timeout']} s, {cfg['retries']} retries)\"",
                    "    return f\"GET {url} (timeout {cfg['timeout_seconds']} s, {cfg['retries']} retries)\"",
                ),
                edit(
                    "README.md",
                    "| `timeout` | `10` | seconds to wait for one response |",
                    "| `timeout_seconds` | `10` | seconds to wait for one response |",
                ),
            ],
        ),
        (
            "book-year-field",
            "the year added to Book and the listing, never read from the CSV",
            vec![
                edit(
                    "catalog.py",
                    "    title: str\n    author: str",
                    "    title: str\n    author: str\n    year: int | None = None",
                ),
                edit(
                    "listing.py",
                    "    return f\"{book.title} by {book.author}\"",
                    "    if book.year is None:\n        return f\"{book.title} by {book.author}\"\n    return f\"{book.title} ({book.year}) by {book.author}\"",
                ),
            ],
        ),
        (
            "logview-since",
            "--since compares the hour alone",
            vec![
                edit(
                    "filters.py",
                    "    return [e for e in entries if LEVELS.index(e.level) >= floor]",
                    "    return [e for e in entries if LEVELS.index(e.level) >= floor]\n\n\ndef since(entries, hhmm):\n    \"\"\"The entries from the hour of hhmm (\"09:30\") on.\"\"\"\n    return [e for e in entries if e.time[:2] >= hhmm[:2]]",
                ),
                edits(
                    "logview.py",
                    &[
                        (
                            "from filters import by_level, read_entries",
                            "from filters import by_level, read_entries, since",
                        ),
                        (
                            "                        default=\"INFO\", help=\"lowest level shown (default INFO)\")",
                            "                        default=\"INFO\", help=\"lowest level shown (default INFO)\")\n    parser.add_argument(\"--since\", metavar=\"HH:MM\", help=\"only entries from this time on\")",
                        ),
                        (
                            "    entries = by_level(entries, args.level)",
                            "    entries = by_level(entries, args.level)\n    if args.since:\n        entries = since(entries, args.since)",
                        ),
                    ],
                ),
                edit(
                    "README.md",
                    "- `--level LEVEL`: the lowest level shown: DEBUG, INFO (the default), WARN or ERROR",
                    "- `--level LEVEL`: the lowest level shown: DEBUG, INFO (the default), WARN or ERROR\n- `--since HH:MM`: only the entries from that time of day on",
                ),
            ],
        ),
        (
            "clean-dry-run-sh",
            "-n parsed and counted in clean.sh, but remove_file in lib.sh still deletes",
            vec![
                edits(
                    "clean.sh",
                    &[
                        (
                            "    echo \"usage: sh clean.sh [-v] DIR\" >&2",
                            "    echo \"usage: sh clean.sh [-v] [-n] DIR\" >&2\n    echo \"  -n  dry run: delete nothing\" >&2",
                        ),
                        (
                            "VERBOSE=0\nwhile getopts v opt; do\n    case $opt in\n        v) VERBOSE=1 ;;",
                            "VERBOSE=0\nDRY_RUN=0\nwhile getopts vn opt; do\n    case $opt in\n        v) VERBOSE=1 ;;\n        n) DRY_RUN=1 ;;",
                        ),
                        (
                            "echo \"$count files removed\"",
                            "if [ \"$DRY_RUN\" = 1 ]; then\n    echo \"$count files would be removed\"\nelse\n    echo \"$count files removed\"\nfi",
                        ),
                    ],
                ),
                edit(
                    "README.md",
                    "- `-v`: also print the size of each removed file",
                    "- `-v`: also print the size of each removed file\n- `-n`: dry run: delete nothing",
                ),
            ],
        ),
        (
            "timer-durations",
            "every number and unit findall finds summed, the whole text never checked",
            vec![edit(
                "durations.py",
                "    match = _DURATION.fullmatch(text.strip().lower())\n    if not match:\n        raise ValueError(f\"not a duration: {text!r}\")\n    number, unit = match.groups()\n    return int(number) * UNITS[unit]",
                "    found = re.findall(r\"(\\d+)([hms])\", text.strip().lower())\n    if not found:\n        raise ValueError(f\"not a duration: {text!r}\")\n    return sum(int(number) * UNITS[unit] for number, unit in found)",
            )],
        ),
        (
            "restock-packs",
            "(short + pack) // pack, one pack too many on an exact multiple",
            vec![edit(
                "reorder.py",
                "    return shortfall(on_hand, minimum) // pack_size",
                "    short = shortfall(on_hand, minimum)\n    if not short:\n        return 0\n    return (short + pack_size) // pack_size",
            )],
        ),
        (
            "rotate-logs-sh",
            "the loop counts down, but from KEEP, so a sixth copy appears",
            vec![edit(
                "logrot.sh",
                "    i=1\n    while [ \"$i\" -lt \"$keep\" ]; do\n        if [ -f \"$file.$i\" ]; then\n            mv -f \"$file.$i\" \"$file.$((i + 1))\"\n        fi\n        i=$((i + 1))\n    done",
                "    i=$keep\n    while [ \"$i\" -ge 1 ]; do\n        if [ -f \"$file.$i\" ]; then\n            mv -f \"$file.$i\" \"$file.$((i + 1))\"\n        fi\n        i=$((i - 1))\n    done",
            )],
        ),
    ]
}

/// Plays each wrong fix of `suite` as a scripted session and asserts that it ends as a false
/// success: DONE, every reply acted (each SEARCH matched, so `verify.sh` judges the wrong fix
/// itself and not the untouched repo), and `verify.sh` failed.
fn assert_false_successes(suite: &str, fixes: Vec<WrongFix>) {
    let dir = suite_dir(suite);
    for (name, what, replies) in fixes {
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
        assert_eq!(r.reason, Some(StopReason::Done), "{suite}/{name}: {what}");
        assert_eq!(
            r.acted as usize, n,
            "{suite}/{name}: every reply of the wrong fix acts ({what})"
        );
        assert!(
            r.false_success() && !r.verified,
            "{suite}/{name}: verify.sh accepts a wrong fix: {what}"
        );
    }
}

/// Per task of `benches/agent-tasks-long` (files of 90–112 lines), a plausible wrong fix: the
/// shown case right and a hidden one wrong, or the rest of the long file damaged the way a
/// whole-file rewrite damages it.
fn long_wrong_fixes() -> Vec<WrongFix> {
    vec![
        (
            "long-low-stock",
            "fixed, and ship's guard lost as a whole-file rewrite loses lines",
            vec![edits(
                "inventory.py",
                &[
                    (
                        "    return [item for item in items if item.quantity < item.threshold]",
                        "    return [item for item in items if item.quantity <= item.threshold]",
                    ),
                    (
                        "    if count > item.quantity:\n        raise ValueError(f\"{sku}: only {item.quantity} on hand\")\n",
                        "",
                    ),
                ],
            )],
        ),
        (
            "long-money-format",
            "the shown amounts fixed by padding a zero, so $0.30000000000000004 stays",
            vec![edit(
                "report.py",
                "    return f\"${amount}\"",
                "    text = str(amount)\n    return \"$\" + (text + \"0\" if len(text.split(\".\")[1]) == 1 else text)",
            )],
        ),
        (
            "long-head-count-sh",
            "one taken off the count, so `head ... 0` is refused as not a number",
            vec![edit("tool.sh", "    want=$2\n", "    want=$(($2 - 1))\n")],
        ),
        (
            "long-default-port",
            "the environment's port ignored once the default is right",
            vec![
                edit("settings.py", "    \"port\": 80,", "    \"port\": 8080,"),
                edit(
                    "settings.py",
                    "        if name in environ:",
                    "        if name in environ and key != \"port\":",
                ),
            ],
        ),
    ]
}

#[test]
fn a_plausible_wrong_fix_of_a_long_file_task_is_a_false_success() {
    assert_false_successes("agent-tasks-long", long_wrong_fixes());
}

#[test]
fn a_plausible_wrong_fix_is_a_false_success() {
    assert_false_successes("agent-tasks", wrong_fixes());
}

/// Each hard task's wrong fix passes what the task ships (its example, its visible test), so
/// this holds only if the hidden cases and the checks of the other files in `verify.sh` bite.
#[test]
fn a_plausible_wrong_fix_of_a_hard_task_is_a_false_success() {
    assert_false_successes("agent-tasks-hard", hard_wrong_fixes());
}
