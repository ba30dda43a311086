//! The global options, resolved once: the workspace root, the state directory, the session id and
//! the permission policy; and the registry and tool context built from them.
//!
//! Rules:
//! - `--root DIR` (default: the current directory) must be an existing directory; it becomes the
//!   [`SANDBOX`] override of the registry, so the file tools resolve every path against it.
//! - `--state-dir DIR` (default: `dirs::state_dir()/toolbox`, i.e. `$XDG_STATE_HOME/toolbox` or
//!   `~/.local/state/toolbox` on Linux; `dirs::data_local_dir()/toolbox` where there is no state
//!   directory, as on macOS and Windows) is where the output cache (`output-cache/`) and the
//!   sessions (`sessions/`) are kept, so that successive `toolbox call`s share them. It is resolved
//!   and checked here (an existing path must be a directory); `call`, `run` and `mcp` create the
//!   output cache directory, and the sessions directory is created by the first session written.
//! - `--session ID` (default: [`default_session`] of the root) is the context's session id: todo
//!   plans are kept per session. An id is 1 to 128 ASCII letters, digits, `.`, `_` or `-`, not
//!   starting with `.` or `-` (it will name a file in the state directory).
//! - `--allow external` turns on tools tagged `external`, `--allow exec` those tagged `exec`
//!   (see [`Policy`], the registry's permission policy); with both, commands may open TCP
//!   connections; `--allow unconfined-exec` lets commands run where the kernel has no Landlock.
//! - `--defer SETS` defers the tools of those sets (see `tool_runtime::RegistryBuilder::defer_sets`):
//!   a set no selected tool is in is an error naming the sets there are.
//! - `--cache-ttl SECS` / `--cache-max-bytes BYTES` bound the output cache (a flag wins over
//!   `TOOL_OUTPUT_TTL_SECS` / `TOOL_OUTPUT_MAX_BYTES`, which win over 24 hours / 256 MiB), and
//!   `--session-ttl SECS` / `--session-max-bytes BYTES` the sessions (over `TOOL_SESSION_TTL_SECS`
//!   / `TOOL_SESSION_MAX_BYTES`, over 30 days / 64 MiB); see `tool_runtime::output::StoreLimits`.
//! - `--store STORE` (else `TOOL_STORE`, else `file`): `file` keeps the output cache and the
//!   sessions in the state directory; `redis://HOST:PORT/DB` keeps both in that Redis
//!   (`tool_runtime::redis`), so that many `toolbox mcp` workers behind one load balancer share
//!   todo plans and cached outputs, and their resource locks (`tool_runtime::locks::RedisLocks`:
//!   an `edit` of a file on one worker waits for an `edit` of it on another). A Redis that is down does not stop the server: the tools that
//!   need a store answer with an error naming it and what to check, the others work as usual.
//! - `--config FILE` names an `mcpServers` file (`tool_mcp::import::McpServersConfig`): every
//!   server in it is connected by [`Setup::connect_imports`] and its tools join the standard ones
//!   (each named with its prefix, default `<server>_`; its set is the server's name). The
//!   permission policy applies to them as to the standard tools: a tool whose `openWorldHint` is
//!   true or absent is tagged `external`, so it is off unless `--allow external` is given.

use std::path::{Path, PathBuf};

use clap::{ArgAction, Args};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tool_mcp::import::{ImportedServer, McpServersConfig};
use tool_runtime::idempotency::{IDEMPOTENCY_NAMESPACE, Idempotency, MemoryIdempotencyStore, RedisIdempotencyStore};
use tool_runtime::locks::RedisLocks;
use tool_runtime::output::{FileStore, OUTPUT_STORE, OutputLayer, OutputStore, StoreLimits, output_limits_from_env};
use tool_runtime::redis::{OUTPUT_NAMESPACE, RedisConnection, RedisStore};
use tool_runtime::{ImageSupport, Registry, RegistryBuilder, SystemClock, ToolContext, ToolContextBuilder};
use tool_std::exec::confine::canonical_as_far_as_it_exists;
use tool_std::exec::{EXEC_CONFIG, ExecConfig, ExecUser};
use tool_std::sandbox::{SANDBOX, Sandbox};
use tool_std::session::{
    FileSessionStore, RedisSessionStore, SESSION_NAMESPACE, SESSION_STORE, SessionStore, session_limits_from_env,
};

use crate::policy::{Permission, Policy};

/// The longest session id accepted, in bytes (ASCII characters).
const MAX_SESSION_ID: usize = 128;

/// The Redis namespace of `toolbox mcp`'s task records (beside the sessions' `tool:sess`).
pub(crate) const TASK_NAMESPACE: &str = "tool:task";

/// The environment variable naming the store when `--store` is not given.
pub(crate) const STORE_ENV: &str = "TOOL_STORE";

/// Where the output cache and the sessions are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreChoice {
    /// In the state directory.
    File,
    /// In the Redis at this URL.
    Redis(String),
}

impl StoreChoice {
    /// `--store`, else `TOOL_STORE`, else [`StoreChoice::File`].
    ///
    /// # Errors
    /// A message naming the option or variable when the value is neither `file` nor a
    /// `redis://` URL.
    fn resolve(flag: Option<&str>, env: Option<&str>) -> Result<Self, String> {
        let (value, from) = match (flag, env) {
            (Some(flag), _) => (flag, "--store"),
            (None, Some(env)) if !env.is_empty() => (env, STORE_ENV),
            _ => return Ok(Self::File),
        };
        if value == "file" {
            Ok(Self::File)
        } else if value.starts_with("redis://") {
            Ok(Self::Redis(value.to_owned()))
        } else {
            Err(format!("{from} {value:?} is not a store; use `file` or `redis://HOST:PORT/DB`"))
        }
    }
}

/// `Ok` when the state directory `state` is not inside the (canonical) workspace `root`, as far
/// as `state` exists (a state directory made later is made where its path says).
///
/// # Errors
/// The refusal, naming both and what to change.
fn state_outside(state: &Path, root: &Path) -> Result<(), String> {
    let state_found = canonical_as_far_as_it_exists(state).unwrap_or_else(|| state.to_path_buf());
    if state_found.starts_with(root) {
        return Err(format!(
            "the state directory {} is inside the workspace root {}: the tools could read and write every session's \
             plans and cached outputs; pass --state-dir DIR outside the root",
            state.display(),
            root.display()
        ));
    }
    Ok(())
}

/// The shell commands' limits given on the command line (`None`: [`ExecConfig`]'s default).
#[derive(Debug, Clone, Copy)]
struct ExecLimits {
    max_processes: Option<u64>,
    max_cpu_seconds: Option<u64>,
    max_address_space_bytes: Option<u64>,
    max_file_size_bytes: Option<u64>,
    max_session_memory_bytes: Option<u64>,
    max_home_bytes: Option<u64>,
    /// `--exec-user`.
    user: Option<ExecUser>,
    /// `--max-commands-per-principal`.
    max_commands_per_principal: Option<usize>,
}

/// The output store and the session store of a registry.
type Stores = (Arc<dyn OutputStore>, Arc<dyn SessionStore>);

/// The resolved global options.
#[derive(Debug)]
pub(crate) struct Setup {
    root: PathBuf,
    state_dir: PathBuf,
    session: Option<String>,
    policy: Policy,
    /// The output cache's bounds: flags, else environment, else defaults.
    cache_limits: StoreLimits,
    /// The sessions' bounds, likewise.
    session_limits: StoreLimits,
    /// `--store`.
    store: StoreChoice,
    /// `--defer`: the sets whose tools are deferred.
    defer: Vec<String>,
    /// `--confirm`: the tags whose tools ask the user before each call.
    confirm: Vec<String>,
    /// `--config`: the `mcpServers` file.
    config: Option<PathBuf>,
    /// `--code-mode` and its limits.
    code: crate::code::CodeFlags,
    /// The shell commands' limits of `--max-processes`, `--max-cpu-seconds`,
    /// `--max-address-space-bytes`, `--max-file-size-bytes`, `--max-session-memory-bytes` and
    /// `--max-home-bytes`, and the user of `--exec-user`, where given.
    exec_limits: ExecLimits,
    /// The limits of each import of `--config` (`--import-*`).
    import_limits: tool_mcp::import::ImportLimits,
    /// The servers of `--config`, once connected.
    imported: std::sync::OnceLock<Vec<ImportedServer>>,
    /// Content capture on the registries' spans ([`crate::telemetry::capture_content`]).
    capture_content: bool,
}

impl Setup {
    /// Resolves the global options; the root is checked when a command needs the tools' sandbox.
    ///
    /// # Errors
    /// A message naming the option when `--state-dir` is not a directory or cannot be found or
    /// is inside the root, or `--session` is not a valid id.
    pub(crate) fn new(global: &Global) -> Result<Self, String> {
        let root = match &global.root {
            Some(root) => root.clone(),
            None => std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}; pass --root DIR"))?,
        };
        let state_dir = state_dir(global.state_dir.as_deref())?;
        // Before anything is made in it; a root that does not exist is refused when it is used.
        if let Ok(canonical_root) = std::fs::canonicalize(&root) {
            state_outside(&state_dir, &canonical_root)?;
        }
        if let Some(session) = &global.session {
            check_session_id(session)?;
        }
        tracing::debug!(root = %root.display(), state_dir = %state_dir.display(), "resolved the global options");
        let cache_limits = with_flags(output_limits_from_env()?, global.cache_ttl, global.cache_max_bytes);
        let session_limits = with_flags(session_limits_from_env()?, global.session_ttl, global.session_max_bytes);
        let store = StoreChoice::resolve(global.store.as_deref(), std::env::var(STORE_ENV).ok().as_deref())?;
        let capture_content = crate::telemetry::capture_content(
            global.capture_content,
            std::env::var(crate::telemetry::CAPTURE_CONTENT_ENV).ok().as_deref(),
        )?;
        Ok(Self {
            root,
            state_dir,
            session: global.session.clone(),
            policy: Policy::new(&global.allow),
            cache_limits,
            session_limits,
            store,
            defer: global.defer.clone(),
            confirm: global.confirm.clone(),
            config: global.config.clone(),
            code: global.code.clone(),
            exec_limits: ExecLimits {
                max_processes: global.max_processes,
                max_cpu_seconds: global.max_cpu_seconds,
                max_address_space_bytes: global.max_address_space_bytes,
                max_file_size_bytes: global.max_file_size_bytes,
                max_session_memory_bytes: global.max_session_memory_bytes,
                max_home_bytes: global.max_home_bytes,
                user: global.exec_user,
                max_commands_per_principal: global.max_commands_per_principal,
            },
            import_limits: global.import.limits(),
            imported: std::sync::OnceLock::new(),
            capture_content,
        })
    }

    /// Connects every server of `--config` on `runtime` (which must outlive the registries
    /// built after), all at once, so that the registries include their tools; nothing without
    /// `--config`. A server that cannot be connected or listed (it does not start, does not
    /// answer within the import's timeouts, or lists past a limit) is skipped while another one
    /// connects: each such server is said on standard error as `toolbox: warning: skipping MCP
    /// server ...` with why, and the others are served.
    ///
    /// # Errors
    /// The file cannot be read or used, or no server of a non-empty file could be connected; the
    /// message names the file, or each server and why.
    pub(crate) fn connect_imports(&self, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
        let Some(path) = &self.config else {
            return Ok(());
        };
        let config = McpServersConfig::read(path).map_err(|e| format!("--config {e}"))?;
        let imports = config.imports();
        let wanted = imports.len();
        let connected = runtime.block_on(futures::future::join_all(
            imports.into_iter().map(|import| import.limits(self.import_limits).connect()),
        ));
        let (servers, failures): (Vec<_>, Vec<_>) = connected.into_iter().partition(Result::is_ok);
        let servers: Vec<ImportedServer> = servers.into_iter().filter_map(Result::ok).collect();
        let failures: Vec<String> = failures.into_iter().filter_map(Result::err).map(|e| e.to_string()).collect();
        if wanted > 0 && servers.is_empty() {
            return Err(failures.join("; "));
        }
        for failure in &failures {
            eprintln!("toolbox: warning: skipping MCP server of --config: {failure}");
        }
        let _ = self.imported.set(servers);
        Ok(())
    }

    /// A receiver of each server of [`Setup::connect_imports`] that moves when its tools change.
    pub(crate) fn import_changes(&self) -> Vec<tokio::sync::watch::Receiver<u64>> {
        self.imported.get().into_iter().flatten().map(ImportedServer::changes).collect()
    }

    /// Closes the connections of [`Setup::connect_imports`] (stdio servers exit).
    pub(crate) async fn close_imports(&self) {
        for server in self.imported.get().into_iter().flatten() {
            server.close().await;
        }
    }

    /// The permission policy of `--allow`.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The state directory (resolved, possibly not created yet).
    pub(crate) fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// `--root` as given (default: the current directory).
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The sandbox of `--root`.
    ///
    /// # Errors
    /// `cannot use --root DIR: <io error>` when the root does not exist or cannot be resolved;
    /// a refusal naming both when the state directory is inside the root (the file tools and the
    /// commands of every session could then read and write the sessions and the output cache of
    /// every other).
    pub(crate) fn sandbox(&self) -> Result<Sandbox, String> {
        let sandbox =
            Sandbox::new(&self.root).map_err(|e| format!("cannot use --root {}: {e}", self.root.display()))?;
        state_outside(&self.state_dir, sandbox.root())?;
        Ok(sandbox)
    }

    /// The session id: `--session`, else [`default_session`] of the canonical root.
    ///
    /// # Errors
    /// As [`Setup::sandbox`].
    pub(crate) fn session(&self) -> Result<String, String> {
        match &self.session {
            Some(session) => Ok(session.clone()),
            None => Ok(default_session(self.sandbox()?.root())),
        }
    }

    /// The standard tools, filtered to `sets` when it is not empty, with the sandbox of `--root`
    /// (resolved now when `with_sandbox`; `list` does not need one), wrapped in code mode with
    /// `--code-mode`.
    ///
    /// # Errors
    /// As [`Setup::sandbox`], or the registry's own error (two tools with one name).
    pub(crate) fn registry(&self, sets: &[String], with_sandbox: bool) -> Result<Registry, String> {
        let mut builder = self.standard_tools()?;
        if !sets.is_empty() {
            builder = builder.sets(sets.iter().cloned());
        }
        if with_sandbox {
            builder = builder.override_dependency(&SANDBOX, self.sandbox()?);
        }
        self.code.wrap(self.permissions(builder).build().map_err(|e| e.to_string())?, |outer| {
            outer.capture_content(self.capture_content)
        })
    }

    /// As [`Setup::registry`], plus the stores of `--store` (and wrapped in code mode with
    /// `--code-mode`, see [`crate::code`]): the output layer with its cache in
    /// `STATE_DIR/output-cache` (so a ref id printed by one `toolbox call` is readable by the
    /// next) and the sessions in `STATE_DIR/sessions` (so a todo plan outlives the process), or
    /// both in Redis.
    ///
    /// # Errors
    /// As [`Setup::registry`]; the output cache directory cannot be created; the Redis URL is not one.
    pub(crate) fn calling_registry(&self, sets: &[String]) -> Result<Registry, String> {
        self.served_registry(sets, None)
    }

    /// As [`Setup::calling_registry`], with idempotent retries on the registry the calls reach
    /// (the code-mode registry with `--code-mode`) when `idempotency` is given.
    ///
    /// # Errors
    /// As [`Setup::calling_registry`].
    pub(crate) fn served_registry(
        &self,
        sets: &[String],
        idempotency: Option<&Idempotency>,
    ) -> Result<Registry, String> {
        let (store, sessions) = self.stores()?;
        let layer = OutputLayer::from_env()?;
        let outer_layer = layer.clone();
        let outer_store = store.clone();
        let mut builder = self
            .standard_tools()?
            .output(layer)
            .override_dependency(&OUTPUT_STORE, store)
            .override_dependency(&SESSION_STORE, sessions)
            .override_dependency(&SANDBOX, self.sandbox()?);
        if !sets.is_empty() {
            builder = builder.sets(sets.iter().cloned());
        }
        if let Some(locks) = self.shared_locks()? {
            builder = builder.locks(locks);
        }
        if let Some(idempotency) = idempotency.filter(|_| !self.code.code_mode) {
            builder = builder.idempotency(idempotency.clone());
        }
        let registry = self.permissions(builder).build().map_err(|e| e.to_string())?;
        self.code.wrap(registry, |outer| {
            let outer = outer
                .output(outer_layer)
                .override_dependency(&OUTPUT_STORE, outer_store)
                .capture_content(self.capture_content);
            match idempotency {
                Some(idempotency) => outer.idempotency(idempotency.clone()),
                None => outer,
            }
        })
    }

    /// Idempotent retries on the store of `--store`: [`MemoryIdempotencyStore`] in this process
    /// for `file`, [`RedisIdempotencyStore`] (namespace [`IDEMPOTENCY_NAMESPACE`]) for
    /// `redis://`; the records' keys are HMACs under `server_key` (at least 32 bytes), or under 32
    /// random bytes drawn now when it is `None`.
    ///
    /// # Errors
    /// `server_key` is shorter than 32 bytes; `--store` is a Redis and `server_key` is `None`
    /// (each worker would draw a key of its own, so none would find another's records); the Redis
    /// URL cannot be used.
    pub(crate) fn idempotency(&self, server_key: Option<&[u8]>) -> Result<Idempotency, String> {
        let idempotency = match &self.store {
            StoreChoice::File => Idempotency::new(MemoryIdempotencyStore::new()),
            StoreChoice::Redis(url) => {
                if server_key.is_none() {
                    return Err("`--idempotency` with `--store redis://...` needs `--idempotency-key-file FILE` (at \
                                least 32 random bytes, the same file for every worker on that Redis): a key drawn by \
                                each worker would hide its records from the others"
                        .to_owned());
                }
                let conn = RedisConnection::open(url).map_err(|e| format!("cannot use --store: {e}"))?;
                Idempotency::new(RedisIdempotencyStore::new(conn, IDEMPOTENCY_NAMESPACE))
            }
        };
        match server_key {
            Some(key) => idempotency.server_key(key).map_err(|e| e.to_string()),
            None => Ok(idempotency),
        }
    }

    /// The store of MCP task records: beside the session store of `--store` (a `tasks` folder in
    /// the state directory, or the Redis namespace [`TASK_NAMESPACE`]) with a budget of its own of
    /// the same limits, so that task records never evict a session's data (a plan, an output).
    ///
    /// # Errors
    /// The Redis URL cannot be used.
    pub(crate) fn task_store(&self) -> Result<Arc<dyn SessionStore>, String> {
        self.task_room("tasks", TASK_NAMESPACE)
    }

    /// The store of the principals' task quota ledgers: as [`task_store`](Self::task_store), in
    /// a `task-quotas` folder or the namespace `tool:task-quota`, so that a ledger and the records
    /// it counts never evict each other.
    ///
    /// # Errors
    /// The Redis URL cannot be used.
    pub(crate) fn task_quota_store(&self) -> Result<Arc<dyn SessionStore>, String> {
        self.task_room("task-quotas", "tool:task-quota")
    }

    /// A session store of the task records' limits in the folder `folder` of the state
    /// directory, or the Redis namespace `namespace`.
    fn task_room(&self, folder: &str, namespace: &str) -> Result<Arc<dyn SessionStore>, String> {
        match &self.store {
            StoreChoice::File => Ok(Arc::new(FileSessionStore::with_limits(
                self.state_dir().join(folder),
                self.session_limits,
                Arc::new(SystemClock),
            ))),
            StoreChoice::Redis(url) => {
                let conn = RedisConnection::open(url).map_err(|e| format!("cannot use --store: {e}"))?;
                Ok(Arc::new(RedisSessionStore::with_limits(
                    conn,
                    namespace,
                    self.session_limits,
                    Arc::new(SystemClock),
                )))
            }
        }
    }

    /// The task runner of `--task-runner`: [`LocalTaskRunner`](tool_mcp::runner::LocalTaskRunner)
    /// for `local`; for `streams`, a [`RedisStreamsRunner`](tool_mcp::runner::RedisStreamsRunner)
    /// on the Redis of `--store` (its stream `tool:task:queue`), taking tasks unless `takes` is
    /// `false`.
    ///
    /// # Errors
    /// `streams` without `--store redis://...` (the queue must be shared by the workers); the
    /// Redis URL cannot be used.
    pub(crate) fn task_runner(
        &self,
        runner: crate::tasks::RunnerChoice,
        takes: bool,
    ) -> Result<Box<dyn FnOnce(tool_mcp::McpServerBuilder) -> tool_mcp::McpServerBuilder>, String> {
        use tool_mcp::runner::{DEFAULT_QUEUE_NAMESPACE, RedisStreamsRunner};
        match (runner, &self.store) {
            (crate::tasks::RunnerChoice::Local, _) if !takes => {
                Err("`--no-task-take` needs `--task-runner streams`: with `local`, a worker runs the tasks it creates"
                    .to_owned())
            }
            (crate::tasks::RunnerChoice::Local, _) => Ok(Box::new(|builder| builder)),
            (crate::tasks::RunnerChoice::Streams, StoreChoice::File) => Err(
                "`--task-runner streams` needs `--store redis://HOST:PORT/DB`: the queue of tasks lives in the Redis \
                 every worker shares; pass --store, or use --task-runner local"
                    .to_owned(),
            ),
            (crate::tasks::RunnerChoice::Streams, StoreChoice::Redis(url)) => {
                let runner = RedisStreamsRunner::open(url, DEFAULT_QUEUE_NAMESPACE)
                    .map_err(|e| format!("cannot use --store: {e}"))?
                    .takes(takes);
                Ok(Box::new(move |builder| builder.task_runner(runner)))
            }
        }
    }

    /// The resource locks of `--store` when it is a Redis, shared by every worker on it
    /// (`tool_runtime::locks::RedisLocks`, lease 10 s); `None` for `file`, whose registry keeps
    /// its locks in the process.
    ///
    /// # Errors
    /// The Redis URL cannot be used.
    fn shared_locks(&self) -> Result<Option<RedisLocks>, String> {
        match &self.store {
            StoreChoice::File => Ok(None),
            StoreChoice::Redis(url) => {
                let conn = RedisConnection::open(url).map_err(|e| format!("cannot use --store: {e}"))?;
                Ok(Some(RedisLocks::new(conn)))
            }
        }
    }

    /// The output store and the session store of `--store`, bounded by their limits.
    ///
    /// # Errors
    /// The output cache directory cannot be created; the Redis URL cannot be used.
    fn stores(&self) -> Result<Stores, String> {
        match &self.store {
            StoreChoice::File => {
                let cache_dir = self.state_dir().join("output-cache");
                let store = FileStore::open(&cache_dir, self.cache_limits, Arc::new(SystemClock))
                    .map_err(|e| format!("cannot use the output cache in {}: {e}", cache_dir.display()))?;
                let sessions = FileSessionStore::with_limits(
                    self.state_dir().join("sessions"),
                    self.session_limits,
                    Arc::new(SystemClock),
                );
                Ok((Arc::new(store), Arc::new(sessions)))
            }
            StoreChoice::Redis(url) => {
                let conn = RedisConnection::open(url).map_err(|e| format!("cannot use --store: {e}"))?;
                let clock = Arc::new(SystemClock);
                let store = RedisStore::with_limits(conn.clone(), OUTPUT_NAMESPACE, self.cache_limits, clock.clone());
                let sessions = RedisSessionStore::with_limits(conn, SESSION_NAMESPACE, self.session_limits, clock);
                Ok((Arc::new(store), Arc::new(sessions)))
            }
        }
    }

    /// The standard tools; with `--allow exec,external` the exec tools are also tagged `external`
    /// (their commands may open TCP connections, so MCP clients see `openWorldHint: true`); and
    /// the tools of the connected `--config` servers. The sets of `--defer` are deferred.
    ///
    /// # Errors
    /// A server's tool that the registry cannot take (its schema, its name), naming both.
    fn standard_tools(&self) -> Result<RegistryBuilder, String> {
        let builder = if self.policy.allows_exec() && self.policy.allows_external() {
            tool_std::registry_builder_with_network_exec()
        } else {
            tool_std::registry_builder()
        };
        self.imported
            .get()
            .into_iter()
            .flatten()
            .try_fold(builder, |builder, server| server.add_to(builder).map_err(|e| e.to_string()))
            .map(|builder| builder.defer_sets(self.defer.iter().cloned()).capture_content(self.capture_content))
    }

    /// The registry's permission policy (the [`Policy`] of `--allow`), the tags of `--confirm`,
    /// and the exec tools'
    /// configuration: commands may open sockets when `external` is allowed too, run without
    /// Landlock with `unconfined-exec`, can read neither the state directory (sessions and the
    /// output cache) nor the default ones, and run under the `--max-*` limits given.
    fn permissions(&self, builder: RegistryBuilder) -> RegistryBuilder {
        let defaults = ExecConfig::default();
        let ExecLimits {
            max_processes,
            max_cpu_seconds,
            max_address_space_bytes,
            max_file_size_bytes,
            max_session_memory_bytes,
            max_home_bytes,
            user,
            max_commands_per_principal,
        } = self.exec_limits;
        let mut hidden = defaults.hidden.clone();
        hidden.push(self.state_dir.clone());
        let exec = ExecConfig {
            network: self.policy.allows_external(),
            allow_unconfined: self.policy.allows_unconfined(),
            hidden,
            max_processes: max_processes.unwrap_or(defaults.max_processes),
            max_cpu_seconds: max_cpu_seconds.unwrap_or(defaults.max_cpu_seconds),
            max_address_space_bytes: max_address_space_bytes.unwrap_or(defaults.max_address_space_bytes),
            max_file_size_bytes: max_file_size_bytes.unwrap_or(defaults.max_file_size_bytes),
            max_session_memory_bytes: max_session_memory_bytes.unwrap_or(defaults.max_session_memory_bytes),
            max_home_bytes: max_home_bytes.unwrap_or(defaults.max_home_bytes),
            user: user.unwrap_or(defaults.user),
            max_commands_per_principal: max_commands_per_principal.unwrap_or(defaults.max_commands_per_principal),
            ..defaults
        };
        let builder = self.confirm.iter().fold(builder, |builder, tag| builder.confirm_tag(tag.clone()));
        builder.policy(self.policy.clone()).override_dependency(&EXEC_CONFIG, exec)
    }

    /// A context builder with the session id set, for a client that takes images (MCP clients do;
    /// the JSON that `call` and `run` print carries image parts as they are).
    ///
    /// # Errors
    /// As [`Setup::session`].
    pub(crate) fn context(&self) -> Result<ToolContextBuilder, String> {
        Ok(ToolContext::builder().session_id(self.session()?).image_support(ImageSupport::Supported))
    }
}

/// `limits` with the time to live (seconds) and the size cap (bytes) of the flags that are given.
fn with_flags(mut limits: StoreLimits, ttl_secs: Option<u64>, max_bytes: Option<u64>) -> StoreLimits {
    if let Some(secs) = ttl_secs {
        limits.ttl = std::time::Duration::from_secs(secs);
    }
    if let Some(bytes) = max_bytes {
        limits.max_bytes = bytes;
    }
    limits
}

/// The default session id of a workspace root: `root-` and the first 16 lowercase hex digits of
/// the SHA-256 of the canonical root path (as bytes of its lossy UTF-8 form). Stable across runs,
/// so successive `toolbox call`s in one workspace share a session.
pub(crate) fn default_session(root: &Path) -> String {
    let digest = Sha256::digest(root.to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("root-{hex}")
}

/// Checks a `--session` id (see the [module docs](self)).
fn check_session_id(id: &str) -> Result<(), String> {
    let valid_chars = id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    let valid_start = id.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    if valid_chars && valid_start && id.len() <= MAX_SESSION_ID {
        Ok(())
    } else {
        Err(format!(
            "--session {id:?} is not a session id; use 1 to {MAX_SESSION_ID} ASCII letters, digits, `.`, `_` or `-`, \
             not starting with `.` or `-`"
        ))
    }
}

/// `--state-dir`, or the user's state directory (see the [module docs](self)).
fn state_dir(flag: Option<&Path>) -> Result<PathBuf, String> {
    let dir = match flag {
        Some(dir) => dir.to_path_buf(),
        None => dirs::state_dir()
            .or_else(dirs::data_local_dir)
            .map(|d| d.join("toolbox"))
            .ok_or_else(|| "cannot find the user's state directory (is $HOME set?); pass --state-dir DIR".to_owned())?,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--state-dir {} is not a directory; give a directory (it is created when needed)",
            dir.display()
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_session_is_root_and_16_hex_digits_of_the_roots_sha256() {
        // `printf /work | sha256sum` = 0c9a453fad615c83c57d...
        assert_eq!(default_session(Path::new("/work")), "root-0c9a453fad615c83");
    }

    #[test]
    fn the_store_is_the_flag_else_the_environment_else_file() {
        let redis = |url: &str| StoreChoice::Redis(url.to_owned());
        assert_eq!(StoreChoice::resolve(None, None), Ok(StoreChoice::File));
        assert_eq!(StoreChoice::resolve(None, Some("")), Ok(StoreChoice::File));
        assert_eq!(StoreChoice::resolve(None, Some("redis://127.0.0.1:7/1")), Ok(redis("redis://127.0.0.1:7/1")));
        assert_eq!(StoreChoice::resolve(Some("file"), Some("redis://127.0.0.1:7/1")), Ok(StoreChoice::File));
        assert_eq!(StoreChoice::resolve(Some("redis://h:1/0"), None), Ok(redis("redis://h:1/0")));
    }

    #[test]
    fn a_store_that_is_neither_file_nor_a_redis_url_is_refused_naming_where_it_came_from() {
        assert_eq!(
            StoreChoice::resolve(Some("memcached://h"), None).unwrap_err(),
            "--store \"memcached://h\" is not a store; use `file` or `redis://HOST:PORT/DB`"
        );
        assert_eq!(
            StoreChoice::resolve(None, Some("/tmp/x")).unwrap_err(),
            "TOOL_STORE \"/tmp/x\" is not a store; use `file` or `redis://HOST:PORT/DB`"
        );
    }

    #[test]
    fn session_ids_with_a_slash_or_a_leading_dot_are_refused() {
        assert_eq!(check_session_id("review-2"), Ok(()));
        assert_eq!(
            check_session_id("../x").unwrap_err(),
            "--session \"../x\" is not a session id; use 1 to 128 ASCII letters, digits, `.`, `_` or `-`, not \
             starting with `.` or `-`"
        );
        assert!(check_session_id("").is_err());
        assert!(check_session_id(&"a".repeat(129)).is_err());
    }
}

/// Options every command accepts.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// The workspace root the file tools are confined to [default: the current directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Where the output cache and the sessions are kept [default: the user's state directory,
    /// `$XDG_STATE_HOME/toolbox` or `~/.local/state/toolbox`].
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// The session id (todo plans are kept per session) [default: one fixed id per root,
    /// `root-` and 16 hex digits].
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) session: Option<String>,
    /// How long a cached tool output is kept after its last use, in seconds [default:
    /// `TOOL_OUTPUT_TTL_SECS`, else 86400 (24 hours)].
    #[arg(long, global = true, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) cache_ttl: Option<u64>,
    /// The bytes all cached tool outputs may take; past it the least recently used go [default:
    /// `TOOL_OUTPUT_MAX_BYTES`, else 268435456 (256 MiB)].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) cache_max_bytes: Option<u64>,
    /// How long a session (its todo plan) is kept after its last use, in seconds [default:
    /// `TOOL_SESSION_TTL_SECS`, else 2592000 (30 days)].
    #[arg(long, global = true, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) session_ttl: Option<u64>,
    /// The bytes all sessions may take; past it the least recently used go [default:
    /// `TOOL_SESSION_MAX_BYTES`, else 67108864 (64 MiB)].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) session_max_bytes: Option<u64>,
    /// Where the output cache and the sessions are kept: `file` (in `--state-dir`) or a Redis
    /// shared by many servers, `redis://HOST:PORT/DB` [default: `TOOL_STORE`, else `file`].
    #[arg(long, global = true, value_name = "STORE")]
    pub(crate) store: Option<String>,
    /// Enable tools that are off by default: `external` ones reach outside this machine (web
    /// fetch, search); `exec` ones run shell commands in the workspace, confined by Landlock
    /// (writes only in the workspace and a session temp dir; sockets refused unless `external` is
    /// allowed too); `unconfined-exec` lets commands run where the kernel has no Landlock.
    /// Comma-separated or repeated.
    #[arg(long, global = true, value_enum, value_delimiter = ',', value_name = "WHAT")]
    pub(crate) allow: Vec<Permission>,
    /// The most processes and threads one shell command may have at once (a `pids` cgroup),
    /// 0 for no limit [default: 512].
    #[arg(long, global = true, value_name = "N")]
    pub(crate) max_processes: Option<u64>,
    /// The CPU time each process of a shell command may use, in seconds (`RLIMIT_CPU`), 0 for
    /// the server's own limit [default: 600].
    #[arg(long, global = true, value_name = "SECS")]
    pub(crate) max_cpu_seconds: Option<u64>,
    /// The address space each process of a shell command may map, in bytes (`RLIMIT_AS`), 0 for
    /// the server's own limit [default: 8589934592 (8 GiB)].
    #[arg(long, global = true, value_name = "BYTES")]
    pub(crate) max_address_space_bytes: Option<u64>,
    /// The largest file each process of a shell command may write, in bytes (`RLIMIT_FSIZE`), 0
    /// for the server's own limit [default: 1073741824 (1 GiB)].
    #[arg(long, global = true, value_name = "BYTES")]
    pub(crate) max_file_size_bytes: Option<u64>,
    /// The most memory the shell commands of one session use together, in bytes (a cgroup v1
    /// `memory` controller per session; past it the kernel kills one of its processes), 0 for no
    /// limit [default: 4294967296 (4 GiB)].
    #[arg(long, global = true, value_name = "BYTES")]
    pub(crate) max_session_memory_bytes: Option<u64>,
    /// The size of each session's HOME for shell commands, in bytes (a `tmpfs`; writes past it
    /// fail with "No space left on device"), 0 for a plain directory in the temp dir [default:
    /// 1073741824 (1 GiB)].
    #[arg(long, global = true, value_name = "BYTES")]
    pub(crate) max_home_bytes: Option<u64>,
    /// The user shell commands run as when toolbox runs as root: `owner` (the owner of the
    /// workspace root, unless that is root), `server` (toolbox's own user, root included), or
    /// `UID[:GID]` (decimal; the workspace root must be writable by it). Another user than root
    /// cannot change the modes, owners, times or attributes of files outside the workspace, nor
    /// read root's files through hard links [default: owner].
    #[arg(long, global = true, value_name = "USER")]
    pub(crate) exec_user: Option<tool_std::exec::ExecUser>,
    /// The most shell commands one caller runs at once, in the foreground and the background
    /// (over MCP with `--auth-issuer`, each token's principal; otherwise every caller together),
    /// 0 for no cap; a `bash` call past it is refused saying so [default: 16].
    #[arg(long, global = true, value_name = "N")]
    pub(crate) max_commands_per_principal: Option<usize>,
    /// Defer the tools of these sets, comma-separated: they are left out of the first request
    /// (`list`, `mcp`) and found through tool search (Anthropic `defer_loading` with a search
    /// tool, OpenAI Responses `tool_search`, else the `search_tools` and `call_tool`
    /// meta-tools); `run` answers the searches. Deferred tools stay callable by name.
    #[arg(long, global = true, value_delimiter = ',', value_name = "SETS")]
    pub(crate) defer: Vec<String>,
    /// Ask the user before each call of a tool with one of these tags (e.g. `destructive,exec`),
    /// showing the tool and its arguments; tools tagged `confirm` always ask. Over MCP the
    /// question is an elicitation to the client's user (a client without elicitation gets a
    /// refusal saying so); `call` and `run`, which have nobody to ask, refuse such calls.
    /// Comma-separated or repeated.
    #[arg(long, global = true, value_delimiter = ',', value_name = "TAGS")]
    pub(crate) confirm: Vec<String>,
    /// An `mcpServers` JSON file (as MCP clients read): the tools of every server in it are
    /// added to the standard ones, named `<server>_<tool>` unless the entry gives a `prefix`.
    /// Their `openWorldHint` (true when absent) makes them `external`.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Record the arguments and results of tool calls on their spans (`execute_tool`, or a served
    /// call's `tools/call` SERVER span: `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`),
    /// secret arguments `[redacted]`
    /// [default: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true`, `SPAN_ONLY` or
    /// `SPAN_AND_EVENT` turn it on), else off: they hold what the model and the tools said].
    #[arg(long, global = true)]
    pub(crate) capture_content: bool,
    /// Log to standard error: `-v` debug, `-vv` trace (default: warnings only). rmcp's lines stay
    /// at warnings whatever the level: its others hold whole MCP messages (a call's arguments,
    /// secret ones included) and legacy session ids.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub(crate) verbose: u8,
    #[command(flatten)]
    pub(crate) code: crate::code::CodeFlags,
    #[command(flatten)]
    pub(crate) import: ImportFlags,
}

/// The limits of each server of `--config` (`tool_mcp::import::ImportLimits`): past one, the
/// server is refused with an error naming it and the limit.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ImportFlags {
    /// With `--config`: the most tools one server may list [default: 1000].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) import_max_tools: Option<u64>,
    /// With `--config`: the most `tools/list` pages one server's listing may take [default: 100].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) import_max_pages: Option<u64>,
    /// With `--config`: the most bytes (as JSON) of one server's tools [default: 8388608 (8 MiB)].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) import_max_listing_bytes: Option<u64>,
    /// With `--config`: how long one request to a server (a `tools/list` page) may take to be
    /// answered, in milliseconds [default: 30000].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) import_request_timeout_ms: Option<u64>,
    /// With `--config`: how long one call of an imported tool may take to be answered, in
    /// milliseconds [default: 600000].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) import_call_timeout_ms: Option<u64>,
    /// With `--config`: the longest string, in bytes, a server's message is passed on with;
    /// a longer one in a call's answer is stored in the output cache (the model sees its head,
    /// tail and ref id), in any other message cut; at least 4096 [default: 1048576 (1 MiB)].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(4096..))]
    pub(crate) import_inline_result_bytes: Option<u64>,
    /// With `--config`: the most bytes one message of a server may take; past it the call it
    /// answers fails naming the server and this flag [default: 268435456 (256 MiB)].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) import_max_result_bytes: Option<u64>,
}

impl ImportFlags {
    /// The import limits: each flag given over `ImportLimits::default()`.
    fn limits(&self) -> tool_mcp::import::ImportLimits {
        let defaults = tool_mcp::import::ImportLimits::default();
        let count =
            |flag: Option<u64>, default: usize| flag.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let millis = |flag: Option<u64>, default| flag.map_or(default, std::time::Duration::from_millis);
        tool_mcp::import::ImportLimits {
            max_tools: count(self.import_max_tools, defaults.max_tools),
            max_pages: count(self.import_max_pages, defaults.max_pages),
            max_listing_bytes: count(self.import_max_listing_bytes, defaults.max_listing_bytes),
            request_timeout: millis(self.import_request_timeout_ms, defaults.request_timeout),
            call_timeout: millis(self.import_call_timeout_ms, defaults.call_timeout),
            inline_result_bytes: count(self.import_inline_result_bytes, defaults.inline_result_bytes),
            max_result_bytes: count(self.import_max_result_bytes, defaults.max_result_bytes),
        }
    }
}

/// A multi-threaded async runtime (one worker per core): a long call on one worker leaves the
/// others to answer `ping`, list tools, forward progress and run the other calls of a batch.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}
