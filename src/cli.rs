//! Command-line definitions (clap): running a debate, the history and model commands.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "moot",
    version,
    about = "A terminal workbench for structured debates between LLM agents",
    long_about = "Ask a hard question; moot seats 2–4 perspectives, lets them argue in rounds, and closes with a decision record.\n\nExamples:\n  moot --headless \"Should we use Redis or PostgreSQL for caching?\"\n  moot --headless --max-rounds 3 --perspectives 3 --no-checkpoints \"How should we structure the plugin system?\"\n  moot --protocol panel --option \"A: Local-first sync\" --option \"B: Online only\" \"How much offline support should v1 have?\"\n  moot list\n  moot show DEB-abc123 --markdown",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,

    /// Config file (default: $MOOT_CONFIG, else the XDG config dir's moot/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The journal: a postgres://… URL, to share one with moot on other hosts (default:
    /// `[journal] url` in config, else the SQLite file in moot's data dir).
    #[arg(long, global = true, value_name = "URL")]
    pub journal: Option<String>,
}

// Deferred: a command's arguments are defined only when it is the one run (or its help is
// shown), so a debate's first frame does not wait for clap to build every command's flags.
// The nested command enums below are deferred for the same reason.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// List stored debates, newest first.
    List {
        /// The debates as JSON.
        #[arg(long)]
        json: bool,
        /// At most this many debates.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Show one stored debate (an id or a unique prefix of one).
    Show {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The debate with its turns and derived views as JSON.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// The full transcript and synthesis as markdown.
        #[arg(long)]
        markdown: bool,
    },
    /// Full-text search over questions, turns, guidance and syntheses.
    Search {
        /// The words to look for (questions, arguments, guidance, syntheses).
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        /// The hits as JSON.
        #[arg(long)]
        json: bool,
        /// At most this many hits.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Export one debate: markdown, JSON, YAML, an arena directory, or a Mermaid or DOT diagram.
    Export {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// What to write.
        #[arg(long, value_enum, default_value_t = ExportFormat::Md)]
        format: ExportFormat,
        /// Write to this file instead of stdout (an existing file is not overwritten).
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
    },
    /// A single model against a debate on your provider: accuracy (95 % interval), tokens and
    /// time per arm, on generated arithmetic, bundled word problems or your own JSONL.
    Bench(BenchArgs),
    /// Serve the HTTP API: many debates at once, followed over SSE, their gates and
    /// checkpoints answered with a POST. Every route but /v1/health needs the token.
    Serve(ServeArgs),
    /// Serve moot to a coding agent as an MCP server over stdin and stdout: its tools convene
    /// debates, follow them, answer their checkpoints and read their decisions, while the
    /// person watches and steers with `moot open ID`.
    Mcp(McpArgs),
    /// A code debate's versions: list them, diff two, apply one to your tree.
    Code {
        #[command(subcommand)]
        action: CodeAction,
    },
    /// Lessons debates wrote for later ones: list, show or remove them, or turn them off/on.
    Lessons {
        #[command(subcommand)]
        action: LessonsAction,
    },
    /// An arena directory's view of a debate: its manifest, a seat's persona, the transcript;
    /// and, for an outside agent, joining and submitting a turn.
    Arena {
        #[command(subcommand)]
        action: ArenaAction,
    },
    /// A debate's approval gates: each request, and how it was decided.
    Gates {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// A debate's audit trail: every request as sent, every raw reply, retries, votes, gates
    /// and lessons used, with timestamps and SHA-256 hashes.
    Audit {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// As JSON.
        #[arg(long, conflicts_with = "verify")]
        json: bool,
        /// Check the journal's hash chain and the trail's hashes, then re-run the protocol over
        /// the journal alone (no provider); exit 1 naming the first row that no longer
        /// matches, or if the re-run does not reach the recorded outcome.
        #[arg(long)]
        verify: bool,
        /// Check a decision record kept elsewhere against the journal: its receipt must name
        /// the journal's chain entry as it stands, and the file must read as the stored record.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "verify"])]
        verify_record: Option<std::path::PathBuf>,
    },
    /// Approve the gate a debate waits at (from any terminal; the debate notices).
    Approve {
        /// A debate's id, or a unique prefix of it.
        id: String,
    },
    /// Reject the gate a debate waits at, saying why (the debate stops there).
    Reject {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// Why: recorded with the rejection, and shown to whoever resumes.
        #[arg(long)]
        reason: String,
    },
    /// Read an arena directory (written by moot or by hand; docs/arena-directory.md) into the
    /// journal, to replay, search and show it like any debate.
    Import {
        /// The debate's directory: `<dir>/<debate_id>`.
        dir: PathBuf,
    },
    /// Continue a paused, interrupted or failed debate where it stopped (on the workbench on
    /// a terminal, NDJSON otherwise), optionally on another provider or checkpoint setting.
    Resume(ResumeArgs),
    /// Open a stored debate in the workbench, replayed from the journal (read-only).
    Open {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// Plain ASCII borders and glyphs.
        #[arg(long)]
        ascii: bool,
        /// dark, light, high-contrast, ansi16, or a theme file.
        #[arg(long, value_name = "NAME")]
        theme: Option<String>,
    },
    /// Opens the workbench on a debate `moot serve` runs: its events over the API, your
    /// answers and gate decisions sent back.
    Attach {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The server (else `[serve] url`, else http://127.0.0.1:7878).
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// A file holding the server's token (else MOOT_SERVE_TOKEN, else the token a server
        /// on this machine generated in the data directory).
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// Plain ASCII borders and glyphs.
        #[arg(long)]
        ascii: bool,
        /// dark, light, high-contrast, ansi16, or a theme file.
        #[arg(long, value_name = "NAME")]
        theme: Option<String>,
    },
    /// Browse, search, open, resume or delete stored debates, or start a new one (the provider
    /// flags are the new-debate form's default).
    History {
        /// Plain ASCII borders and glyphs.
        #[arg(long)]
        ascii: bool,
        /// dark, light, high-contrast, ansi16, or a theme file.
        #[arg(long, value_name = "NAME")]
        theme: Option<String>,
        #[command(flatten)]
        provider: ProviderArgs,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) for moot.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print moot's manual page (roff): `moot man | man -l -`.
    Man,
    /// The protocols moot runs, with what each does.
    Protocols {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Settle a contested result, or a debate paused at its choice: the option the person
    /// chooses (`moot show ID` lists them).
    Decide {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The option chosen, by its letter.
        option: String,
        /// Decide again a result already decided (both decisions stay in the journal).
        #[arg(long)]
        force: bool,
    },
    /// The perspective catalog: built-in and user-defined.
    Perspectives {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Models for the embedded provider: pull the default, add, list, remove.
    Model {
        #[command(subcommand)]
        action: ModelCommand,
    },
    /// The journal itself: copy every debate, with its chain, to another one.
    Journal {
        #[command(subcommand)]
        action: JournalCommand,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum JournalCommand {
    /// Copy every debate of this journal (`--journal`, else `[journal] url`, else the local
    /// SQLite file), with its hash chain, its bench runs and preferences, into another, and
    /// check each debate's chain there: to PostgreSQL, or back to a new SQLite file.
    Copy {
        /// A postgres://… URL, or the path of a SQLite file to make.
        #[arg(long, value_name = "URL|FILE")]
        to: String,
    },
}

/// Continue a paused, interrupted or failed debate where it stopped (on the workbench on a
/// terminal, NDJSON otherwise), optionally on another provider or checkpoint setting.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// A debate's id, or a unique prefix of it.
    pub id: String,
    #[command(flatten)]
    pub face: FaceArgs,
    #[command(flatten)]
    pub checkpoints: CheckpointArgs,
    /// Pull the embedded model without asking if it is needed and missing.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// A panel's options, when its moderator proposed none it could use (repeatable):
    /// "A: label — description". Refused once the judges have weighed options.
    #[arg(long = "option", value_name = "TEXT")]
    pub options: Vec<String>,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ModelCommand {
    /// Fetch the default model (SmolLM2-135M-Instruct, 98 MB) and verify its SHA-256.
    Pull {
        /// The model to fetch; only the default is known.
        #[arg(default_value = crate::llm::models::DEFAULT_MODEL.name)]
        name: String,
    },
    /// Add a GGUF chat model from a path or an http(s) URL.
    Add {
        /// A .gguf file's path, or an http(s) URL to fetch it from.
        #[arg(value_name = "PATH|URL")]
        source: String,
        /// The name to use it by (default: the file's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// The models on this machine.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a model.
    Rm {
        /// The model's name (`moot model list`).
        name: String,
    },
    /// Print a model's file path (for scripts, or llama.cpp's own tools).
    Path {
        /// The model's name (`moot model list`).
        #[arg(default_value = crate::llm::models::DEFAULT_MODEL.name)]
        name: String,
    },
    /// Which of moot's kernels this CPU runs, as found at run time.
    Kernels,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Md,
    Json,
    /// The protocol's own document (`debate_result`, `synthesis`) as YAML.
    Yaml,
    /// An arena directory (docs/arena-directory.md) under `--out DIR` (any protocol).
    Arena,
    /// A Mermaid flowchart: the argument graph (supports, attacks, scores), who saw whom, and a
    /// code debate's versions.
    Mermaid,
    /// The same diagram as Graphviz DOT.
    Dot,
}

/// Serve the HTTP API: many debates at once, followed over SSE, their gates and checkpoints
/// answered with a POST. Every route but /v1/health needs the token.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Where to listen. An address beyond this machine needs an explicit token
    /// (MOOT_SERVE_TOKEN or --token-file).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: String,
    /// A file holding the bearer token (else MOOT_SERVE_TOKEN, else one generated at first
    /// start into the data directory, mode 0600).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The most debates running at once; a request beyond it is answered 429.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_debates: u64,
    /// Seconds without progress, while no person is asked anything, before a debate is
    /// flagged as stalled (else `[serve] stall_seconds`, else 300).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub stall_seconds: Option<u64>,
    /// The provider every debate runs on unless a request names a configured one.
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// Serve moot to a coding agent as an MCP server over stdin and stdout.
#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// The most debates running at once; a convene_debate beyond it is refused.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_debates: u64,
    /// The provider every debate runs on unless a request names a configured one.
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// A single model against a debate on your provider: accuracy (95 % interval), tokens and
/// time per arm, on generated arithmetic, bundled word problems or your own JSONL.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// The problems: arithmetic (Du et al.'s `a+b*c+d-e*f`, the default), words (grade-school
    /// word problems), choice (multiple-choice questions, scored by letter) or code (functions
    /// scored by hidden tests run in the sandbox: pass@1); the last three bundled with moot.
    #[arg(long, value_parser = ["arithmetic", "words", "choice", "code"])]
    pub set: Option<String>,
    /// A JSONL file instead of the bundled problems: {"question", "answer"} lines; with --set
    /// choice, MMLU-shaped {"question", "choices", "answer"}; with --set code, HumanEval-shaped
    /// {"task_id", "prompt", "entry_point", "test"} (and "language": "sh" for shell).
    #[arg(long, value_name = "FILE")]
    pub dataset: Option<PathBuf>,
    /// Run code problems' hidden tests without the box where this machine can build none, or
    /// uncapped where nothing can cap them (as a code debate's `--unsandboxed-hooks`); the
    /// report says so.
    #[arg(long)]
    pub unsandboxed_hooks: bool,
    /// How many problems (the first N of a dataset).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub problems: u64,
    /// The seed of the generated arithmetic.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The arms, comma-separated: single, self-consistency (sc), debate, blind-first (with
    /// --protocol), mixed (with --seat-model). Default: the first three, and blind-first or
    /// mixed when their flags are given.
    #[arg(long, value_delimiter = ',')]
    pub arms: Vec<String>,
    /// Run the debate arm as one of moot's protocols (`moot protocols`) instead of Du et al.'s
    /// exchange: a real debate per problem, its answer read from the record.
    #[arg(long, value_name = "NAME")]
    pub protocol: Option<String>,
    /// With --protocol: a blind-first arm beside the debate, the same protocol with a blind
    /// first round (every seat answers before it reads another's).
    #[arg(long)]
    pub blind_first: bool,
    /// A mixed arm beside the debate: the same debate with seat SEAT (A is the first) on a
    /// model of its own; repeat it for more seats. The seats not named stay on --provider.
    #[arg(long = "seat-model", value_name = "SEAT=PROVIDER[:MODEL]")]
    pub seat_models: Vec<String>,
    /// Debaters (Du et al.: 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..=8))]
    pub agents: u64,
    /// Debate rounds, the first included (Du et al.: 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=5))]
    pub rounds: u64,
    /// Self-consistency samples drawn at once (default agents × rounds); more follow until
    /// they have used the debate's tokens.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub samples: Option<u64>,
    /// Problems run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub jobs: u64,
    /// Where the JSON and markdown reports are written.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Continue an interrupted run (its problems and arms as stored).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Print the JSON report instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Pull the embedded model without asking, when it is the provider and not here yet.
    #[arg(long)]
    pub yes: bool,
}

/// A code debate's versions: list them, diff two, apply one to your tree.
#[derive(Debug, Clone, Subcommand)]
#[command(defer = true)]
pub enum CodeAction {
    /// Every version with its tests, quality and commit; the winner starred.
    Versions {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The Reflexion loop's episodes: each attempt's version, code, test results and the
    /// reflection written on it.
    Episodes {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The diff between two versions (as git prints it).
    Diff {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The version to diff from (its number).
        from: u32,
        /// The version to diff to (its number).
        to: u32,
    },
    /// Applies a version (the winner by default) to your work tree as a patch; refused on
    /// uncommitted changes (unless --force), on any conflict, and for a version that fails its
    /// tests (unless --failing).
    Apply {
        /// A debate's id, or a unique prefix of it.
        id: String,
        #[arg(long)]
        version: Option<u32>,
        /// Apply over uncommitted changes.
        #[arg(long)]
        force: bool,
        /// Apply a version that fails its tests.
        #[arg(long)]
        failing: bool,
    },
    /// Removes what finished code debates left outside the journal: moot's git dir of their
    /// versions, temporary work trees, and `moot/DEB-…` branches older debates made in your
    /// repository. Paused, failed or interrupted debates keep theirs (they may be resumed).
    Prune {
        /// Only debates that finished at least this many days ago.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<u32>,
        /// Say what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Lessons debates wrote for later ones: list, show or remove them, or turn them off/on.
#[derive(Debug, Clone, Subcommand)]
#[command(defer = true)]
pub enum LessonsAction {
    /// Every stored lesson, newest first.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// One lesson in full, with the debate it came from.
    Show {
        /// Its id (`L3` or `3`).
        id: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a lesson.
    Rm {
        /// The lesson's id (`L3` or `3`).
        id: String,
    },
    /// Stop giving and writing lessons, for every debate from now on.
    Off,
    /// Give and write lessons again.
    On,
}

/// An arena directory's view of a debate, and what an outside agent taking part can do.
#[derive(Debug, Clone, Subcommand)]
#[command(defer = true)]
pub enum ArenaAction {
    /// The debate's manifest: topic, participants, status, the turn it waits for.
    Info {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// A seat's persona (by agent id or role name).
    Persona {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The seat: its id or its role.
        seat: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The arguments so far, optionally one seat's or those after turn N.
    Transcript {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The seat: its id or its role.
        #[arg(long)]
        seat: Option<String>,
        /// Only the turns after turn N.
        #[arg(long, value_name = "N")]
        since: Option<u32>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Acknowledge taking part as a seat (an outside agent).
    Join {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The seat: its id or its role.
        #[arg(long)]
        seat: String,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Submit the argument of the turn the debate waits for (a JSON file with at least
    /// `argument_text`; `references`, `metadata`, `turn_number`, `agent_id` optional).
    Submit {
        /// A debate's id, or a unique prefix of it.
        id: String,
        /// The seat: its id or its role.
        #[arg(long)]
        seat: String,
        /// The turn's file: JSON with the argument's text (docs/arena-directory.md).
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CheckpointMode {
    /// Answer every question with its default: continue between rounds, accept a
    /// conclusion, approve the synthesis.
    #[default]
    Auto,
    /// Read answers from stdin: `c`, `g TEXT`, `e`; `accept`, `revise TEXT`, `reject`.
    Stdin,
    /// Answer nothing here: each question waits for another terminal (the workbench opened on
    /// the running debate, or `moot approve ID`) until the checkpoint timeout.
    Wait,
}

/// Which face runs, and how the workbench looks.
#[derive(Debug, Clone, Default, Args)]
pub struct FaceArgs {
    /// Print NDJSON events instead of opening the workbench.
    #[arg(long)]
    pub headless: bool,

    /// Plain ASCII borders and glyphs, for terminals without Unicode box drawing.
    #[arg(long)]
    pub ascii: bool,

    /// Workbench theme: dark, light, high-contrast, ansi16, or a theme file.
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
}

/// Whether the person is asked between rounds, at a conclusion and about the synthesis, and
/// how a headless run answers.
#[derive(Debug, Clone, Default, Args)]
pub struct CheckpointArgs {
    /// Run to completion without asking (the synthesis is then recorded as unapproved).
    #[arg(long, conflicts_with = "checkpoints")]
    pub no_checkpoints: bool,

    /// How a headless run answers: auto (the defaults), stdin (lines you type or pipe) or wait
    /// (another terminal answers: the workbench on the debate, or moot approve/decide).
    #[arg(long, value_enum, value_name = "MODE")]
    pub checkpoints: Option<CheckpointMode>,
}

impl CheckpointArgs {
    /// Checkpoints on or off, when these flags say (`--checkpoints MODE` turns them on).
    pub fn enabled(&self) -> Option<bool> {
        if self.no_checkpoints {
            Some(false)
        } else {
            self.checkpoints.map(|_| true)
        }
    }

    pub fn mode(&self) -> CheckpointMode {
        self.checkpoints.unwrap_or_default()
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// openai, anthropic, ollama, local, scripted, or a [providers.NAME] from config.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model; for `local`, a name from `moot model list` or a path to a .gguf file.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server (…/v1) or an Anthropic proxy.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// A replay script for the scripted provider.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
}

/// A time limit: whole seconds from one to a year (a longer one would overflow the clock).
fn seconds() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=crate::engine::LONGEST_WAIT_SECONDS)
}

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The question to debate.
    #[arg(value_name = "QUESTION")]
    pub question: Vec<String>,

    /// The protocol that runs the debate (`moot protocols` lists them; default moderated).
    #[arg(long, value_name = "NAME")]
    pub protocol: Option<String>,

    /// Record that an outside agent started this debate (`agent:NAME`), as `initiated_by`.
    #[arg(long, value_name = "agent:NAME")]
    pub initiated_by: Option<String>,

    /// End with a vote: every seat ranks the positions on the table, counted by plurality,
    /// borda, condorcet, unanimous, weighted, threshold or auto.
    #[arg(long, value_name = "METHOD")]
    pub vote: Option<String>,

    /// Neither give this debate lessons from earlier ones nor write lessons from it.
    #[arg(long)]
    pub no_lessons: bool,

    /// Stop for approval at these gates (comma-separated: after_round, before_synthesis, or a
    /// protocol's own: a code debate's after_proposal, after_critique, after_adversarial and
    /// before_apply), instead of `[gates]` in config.
    #[arg(long, value_name = "POINTS", value_delimiter = ',')]
    pub gates: Option<Vec<String>>,

    /// The flags protocols add (`--option`, `--context`…), as given: name → values.
    #[arg(skip)]
    pub protocol_flags: std::collections::BTreeMap<String, Vec<String>>,

    #[command(flatten)]
    pub face: FaceArgs,

    /// Maximum rounds (1–20; default 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub max_rounds: Option<u32>,

    /// Number of debaters (2–4; default: decided from the question).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=4))]
    pub perspectives: Option<u32>,

    /// Seat this perspective (repeat for each; see `moot perspectives`).
    #[arg(long = "perspective", value_name = "NAME")]
    pub named: Vec<String>,

    /// Put one seat on a model of its own (repeat for each): the seat by its letter (A–D) or
    /// its perspective, the provider a kind or a configured profile, as in A=ollama:qwen2.5.
    #[arg(long = "seat-model", value_name = "SEAT=PROVIDER[:MODEL]")]
    pub seat_models: Vec<String>,

    #[command(flatten)]
    pub checkpoints: CheckpointArgs,

    /// Per-seat token budget per round; 0 or "unlimited" disables it.
    #[arg(long, value_name = "TOKENS")]
    pub token_budget: Option<String>,

    /// Time for one round, in seconds (at most a year).
    #[arg(long, value_name = "SECONDS", value_parser = seconds())]
    pub round_timeout: Option<u64>,

    /// How long a question waits for an answer before the debate pauses (at most a year).
    #[arg(long, value_name = "SECONDS", value_parser = seconds())]
    pub checkpoint_timeout: Option<u64>,

    /// Time for the whole debate, in seconds (at most a year).
    #[arg(long, value_name = "SECONDS", value_parser = seconds())]
    pub total_timeout: Option<u64>,

    /// Do not write the decision record file.
    #[arg(long)]
    pub no_write: bool,

    /// Where decision records go (default docs/decisions).
    #[arg(long, value_name = "DIR")]
    pub decisions_dir: Option<PathBuf>,

    /// Also write an issue draft (context, decision, action items) next to the record.
    #[arg(long)]
    pub follow_up: bool,

    /// Make every call one after another instead of running arguments in parallel.
    #[arg(long)]
    pub sequential: bool,

    /// Pull the embedded model without asking if it is needed and missing.
    #[arg(long, short = 'y')]
    pub yes: bool,

    #[command(flatten)]
    pub provider: ProviderArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// The commands are deferred (built only when run or shown); one run or shown must still
    /// have every flag, and the global `--config` before or after it.
    #[test]
    fn a_deferred_command_is_whole_when_it_runs_or_shows_its_help() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["moot", "list", "--limit", "3", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::List {
                json: true,
                limit: 3
            })
        ));
        let cli = Cli::try_parse_from(["moot", "lessons", "list", "--json", "--config", "c.toml"])
            .unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Lessons {
                action: LessonsAction::List { json: true },
                ..
            })
        ));
        assert_eq!(cli.config, Some(PathBuf::from("c.toml")));
        let refused = Cli::try_parse_from(["moot", "list", "--limits", "3"]).unwrap_err();
        assert_eq!(refused.kind(), clap::error::ErrorKind::UnknownArgument);
        let help = Cli::try_parse_from(["moot", "list", "--help"])
            .unwrap_err()
            .to_string();
        assert!(help.contains("--limit <LIMIT>"), "{help}");
        let help = Cli::try_parse_from(["moot", "model", "pull", "--help"])
            .unwrap_err()
            .to_string();
        assert!(help.contains("[NAME]"), "{help}");
        let top = Cli::try_parse_from(["moot", "--help"])
            .unwrap_err()
            .to_string();
        assert!(
            top.contains("lessons") && top.contains("--max-rounds <N>"),
            "{top}"
        );
    }
}
